import { afterEach, describe, expect, it } from 'vitest';
import { FHIR_JSON, startFhirHarness, type FhirHarness } from './support/fhir-harness.ts';
import { condition } from './support/notifications.ts';

let h: FhirHarness;
const SUB = 'https://ehr.example.org/fhir/Subscription/sub-9';
const HOOK = '/v1/fhir/rest-hook/problems';
const CRITERIA = 'Condition?category=problem-list-item';

afterEach(async () => {
  await h.close();
});

function inject(
  method: 'POST' | 'PUT' | 'DELETE',
  url: string,
  body?: unknown,
  headers = FHIR_JSON,
) {
  return h.app.inject({
    method,
    url,
    headers,
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

async function items(localId: string) {
  const psid = await h.crosswalk.find(localId);
  if (psid === undefined) return undefined;
  return (await h.records.get(psid))?.clinical?.items;
}

async function ignored(reason: string): Promise<number> {
  const text = await h.registry.metrics();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`cw_fhir_ignored_total{reason="${reason}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

/** An R5 SubscriptionStatus notification whose events carry the given focus objects. */
function notification(
  topic: string,
  focuses: Record<string, unknown>[],
  resources: Record<string, unknown>[] = [],
) {
  return {
    resourceType: 'Bundle',
    type: 'history',
    entry: [
      {
        resource: {
          resourceType: 'SubscriptionStatus',
          status: 'active',
          type: 'event-notification',
          eventsSinceSubscriptionStart: String(focuses.length),
          notificationEvent: focuses.map((focus, i) => ({ eventNumber: String(i + 1), focus })),
          subscription: { reference: SUB },
          topic,
        },
      },
      ...resources.map((resource) => ({ resource })),
    ],
  };
}

const patient = (id: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Patient',
  id,
  birthDate: '1955-05-05',
  gender: 'female',
  ...extra,
});

describe('identifier-only focus (focus.identifier)', () => {
  it('is resolved by a search on the FHIR server, with the token, and applied', async () => {
    h = await startFhirHarness();
    h.fhir.put(
      condition('idc1', 'idp1', {
        identifier: [{ system: 'urn:oid:1.2.3.4', value: 'PROB-77' }],
      }),
    );
    h.fhir.put(patient('idp1'));
    const res = await inject(
      'POST',
      '/v1/fhir/notifications',
      notification('http://example.org/topics/problem-list', [
        { type: 'Condition', identifier: { system: 'urn:oid:1.2.3.4', value: 'PROB-77' } },
      ]),
    );
    expect(res.statusCode).toBe(200);
    const search = h.fhir.seen.find((r) => r.path === 'Condition');
    expect(search).toMatchObject({
      method: 'GET',
      authorized: true,
      query: { identifier: 'urn:oid:1.2.3.4|PROB-77' },
    });
    expect((await items('idp1'))?.['fhir:Condition/idc1']).toMatchObject({ kind: 'condition' });
  });

  it('is acknowledged (200) and counted when the server finds none, or the type is unknown', async () => {
    h = await startFhirHarness();
    const before = await h.snapshot();
    const res = await inject(
      'POST',
      '/v1/fhir/notifications',
      notification('http://example.org/topics/problem-list', [
        { type: 'Condition', identifier: { system: 'urn:x', value: 'nothing-here' } },
        { identifier: { system: 'urn:x', value: 'no-type' } },
      ]),
    );
    expect(res.statusCode).toBe(200);
    expect(await ignored('focus_not_found')).toBe(1);
    expect(await ignored('focus_unresolvable')).toBe(1);
    expect(await ignored('notification')).toBe(1);
    // Only the subscription's event number moved, and the message trace took the notification's
    // receipt (accepted, filtered: docs/message-trace.md).
    const after = await h.snapshot();
    const changed = [...after.keys()].filter((k) => before.get(k) !== after.get(k));
    expect(changed.filter((k) => !k.includes(':fhirsub:') && !k.includes(':trace:'))).toEqual([]);
    // One receipt per event number of the notification (1 and 2), and the recent messages.
    expect(
      changed
        .filter((k) => k.includes(':trace:'))
        .map((k) => k.slice(k.indexOf(':trace:')))
        .sort(),
    ).toEqual([':trace:m:1', ':trace:m:2', ':trace:recent']);
  });
});

describe('notifications for topics and resources we do not use', () => {
  it('are acknowledged (200), counted and change no record', async () => {
    h = await startFhirHarness();
    const res = await inject(
      'POST',
      '/v1/fhir/notifications',
      notification(
        'http://example.org/topics/encounter-start',
        [{ reference: 'Encounter/enc-1' }],
        [
          {
            resourceType: 'Encounter',
            id: 'enc-1',
            status: 'in-progress',
            subject: { reference: 'Patient/enc-patient' },
          },
          // A type we do not use, without an id: no reason to refuse it either.
          { resourceType: 'DiagnosticReport', status: 'final' },
        ],
      ),
    );
    expect(res.statusCode).toBe(200);
    expect(await ignored('resource_type')).toBe(2);
    expect(await ignored('notification')).toBe(1);
    expect(await h.crosswalk.find('enc-patient')).toBeUndefined();
    expect(await h.inspect.keys(`${h.prefix}:xw*`)).toEqual([]);
  });
});

describe('classic R4 rest-hook subscriptions', () => {
  const hooks = [
    { name: 'problems', criteria: CRITERIA, first_lookback_s: 86_400, overlap_s: 300 },
  ];

  it('answers a ping (empty body) by reading the criteria since the last read', async () => {
    h = await startFhirHarness({ restHooks: hooks });
    const recent = new Date(Date.now() - 60_000).toISOString();
    h.fhir.put(condition('rh1', 'rhp1', { meta: { lastUpdated: recent } }));
    h.fhir.put(condition('old', 'rhp1', { meta: { lastUpdated: '2001-01-01T00:00:00Z' } }));
    h.fhir.put(patient('rhp1'));

    for (const headers of [
      { authorization: FHIR_JSON.authorization },
      // Some servers name a content type on a ping that has no content.
      { ...FHIR_JSON, 'content-length': '0' },
    ]) {
      const res = await h.app.inject({ method: 'POST', url: HOOK, headers });
      expect(res.statusCode).toBe(200);
    }
    const searches = h.fhir.seen.filter((r) => r.path === 'Condition');
    expect(searches).toHaveLength(2);
    expect(searches[0]?.query).toMatchObject({ category: 'problem-list-item' });
    const [first, second] = searches.map((s) => Date.parse((s.query._lastUpdated ?? '').slice(2)));
    // The first read looks back a day; the second starts near the first (less the overlap).
    expect(Date.now() - (first as number)).toBeGreaterThanOrEqual(86_400_000);
    expect(second as number).toBeGreaterThan(first as number);

    const got = await items('rhp1');
    expect(Object.keys(got ?? {})).toEqual(['fhir:Condition/rh1']);
    // The Patient was read for the birth date: the record can be assembled.
    const psid = (await h.crosswalk.find('rhp1')) as string;
    expect((await h.records.get(psid))?.clinical?.patient.birthDate).toBe('1955-05-05');
  });

  it('takes the empty form HAPI FHIR posts as a ping, and refuses a form with content (415)', async () => {
    h = await startFhirHarness({ restHooks: hooks });
    h.fhir.put(condition('rh5', 'rhp5', { meta: { lastUpdated: new Date().toISOString() } }));
    h.fhir.put(patient('rhp5'));
    const form = { authorization: FHIR_JSON.authorization };
    const type = 'application/x-www-form-urlencoded; charset=UTF-8';
    const ping = await h.app.inject({
      method: 'POST',
      url: HOOK,
      headers: { ...form, 'content-type': type, 'content-length': '0' },
    });
    expect(ping.statusCode).toBe(200);
    expect(Object.keys((await items('rhp5')) ?? {})).toEqual(['fhir:Condition/rh5']);
    const withContent = await h.app.inject({
      method: 'POST',
      url: HOOK,
      headers: { ...form, 'content-type': type },
      payload: 'a=1',
    });
    expect(withContent.statusCode).toBe(415);
    expect(h.fhir.seen.filter((r) => r.path === 'Condition')).toHaveLength(1);
  });

  it('applies PUT {endpoint}/{type}/{id} with the full resource', async () => {
    h = await startFhirHarness({ restHooks: hooks });
    const put = await inject('PUT', `${HOOK}/Condition/rh2`, condition('rh2', 'rhp2'));
    expect(put.statusCode).toBe(200);
    expect((await items('rhp2'))?.['fhir:Condition/rh2']).toMatchObject({ kind: 'condition' });
    const patientPut = await inject('PUT', `${HOOK}/Patient/rhp2`, patient('rhp2'));
    expect(patientPut.statusCode).toBe(200);
    const psid = (await h.crosswalk.find('rhp2')) as string;
    const record = await h.records.get(psid);
    expect(record?.clinical?.patient.birthDate).toBe('1955-05-05');
    // A Patient alone never wipes the record.
    expect(Object.keys(record?.clinical?.items ?? {})).toEqual(['fhir:Condition/rh2']);
    // A type we do not use: acknowledged and counted.
    const enc = await inject('PUT', `${HOOK}/Encounter/e9`, {
      resourceType: 'Encounter',
      id: 'e9',
    });
    expect(enc.statusCode).toBe(200);
    expect(await ignored('resource_type')).toBe(1);
  });

  it('refuses a resource the path does not name (422), an unknown endpoint (404)', async () => {
    h = await startFhirHarness({ restHooks: hooks });
    const before = await h.snapshot();
    const wrong = await inject('PUT', `${HOOK}/Condition/other`, condition('rh3', 'rhp3'));
    expect(wrong.statusCode).toBe(422);
    const unknown = await inject(
      'PUT',
      '/v1/fhir/rest-hook/nope/Condition/rh3',
      condition('rh3', 'rhp3'),
    );
    expect(unknown.statusCode).toBe(404);
    expect(await h.snapshot()).toEqual(before);
  });
});

describe('FHIR Patient delete', () => {
  const hooks = [
    { name: 'problems', criteria: CRITERIA, first_lookback_s: 86_400, overlap_s: 300 },
  ];

  it('DELETE {endpoint}/Patient/{id} purges the patient as A23 does, audited as fhir', async () => {
    h = await startFhirHarness({ restHooks: hooks });
    await inject('PUT', `${HOOK}/Condition/d1`, condition('d1', 'delp'));
    const psid = (await h.crosswalk.find('delp')) as string;
    expect(await h.records.get(psid)).toBeDefined();

    const res = await inject('DELETE', `${HOOK}/Patient/delp`);
    expect(res.statusCode).toBe(204);
    expect(await h.crosswalk.find('delp')).toBeUndefined();
    expect(await h.records.get(psid)).toBeUndefined();
    const audit = await h.admin?.audit.list();
    expect(audit?.map((e) => [e.action, e.actor, e.outcome])).toEqual([['purge', 'fhir', 'done']]);

    // Again: nothing left to delete, still acknowledged (deletes are idempotent).
    const again = await inject('DELETE', `${HOOK}/Patient/delp`);
    expect(again.statusCode).toBe(204);
    expect(await ignored('delete_unknown_patient')).toBe(1);
  });

  it('logs neither the patient id of a delete nor the identifier a focus names', async () => {
    h = await startFhirHarness({ restHooks: hooks });
    await inject('PUT', `${HOOK}/Condition/d2`, condition('d2', 'planted-del-7731'));
    await inject('DELETE', `${HOOK}/Patient/planted-del-7731`);
    await inject(
      'POST',
      '/v1/fhir/notifications',
      notification('http://example.org/topics/problem-list', [
        { type: 'Condition', identifier: { system: 'urn:x', value: 'planted-mrn-5521' } },
      ]),
    );
    expect(h.logLines.length).toBeGreaterThan(0);
    const logs = h.logLines.join('\n');
    expect(logs).not.toContain('planted-del-7731');
    expect(logs).not.toContain('planted-mrn-5521');
  });

  it('a notification whose Patient focus the server answers 410 Gone purges the patient', async () => {
    h = await startFhirHarness();
    const bundle = {
      resourceType: 'Bundle',
      type: 'collection',
      entry: [{ resource: patient('gone-p') }, { resource: condition('g1', 'gone-p') }],
    };
    expect((await inject('POST', '/v1/fhir/Bundle', bundle)).statusCode).toBe(202);
    h.fhir.deleted.add('Patient/gone-p');
    const res = await inject(
      'POST',
      '/v1/fhir/notifications',
      notification('http://example.org/topics/patient-delete', [
        { reference: `${h.fhir.baseUrl}/Patient/gone-p` },
      ]),
    );
    expect(res.statusCode).toBe(200);
    expect(await h.crosswalk.find('gone-p')).toBeUndefined();
  });

  it('answers 503 with Retry-After and changes nothing where no purge is wired', async () => {
    h = await startFhirHarness({ restHooks: hooks, admin: false });
    await inject('PUT', `${HOOK}/Condition/n1`, condition('n1', 'nop'));
    const before = await h.snapshot();
    const res = await inject('DELETE', `${HOOK}/Patient/nop`);
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
    expect(await h.snapshot()).toEqual(before);
  });
});
