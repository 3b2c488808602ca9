import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventTracker } from '../../../src/ingest/fhir/event-tracker.ts';
import { FHIR_JSON, startFhirHarness, type FhirHarness } from './support/fhir-harness.ts';
import {
  condition,
  fixture,
  hba1c,
  r4Notification,
  r5Notification,
} from './support/notifications.ts';

let h: FhirHarness;
const SUB = 'https://ehr.example.org/fhir/Subscription/sub-1';

afterEach(async () => {
  await h.close();
});

function post(body: unknown, headers: Record<string, string> = FHIR_JSON) {
  return h.app.inject({
    method: 'POST',
    url: '/v1/fhir/notifications',
    headers,
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function items(localId: string) {
  const psid = await h.crosswalk.find(localId);
  if (psid === undefined) return undefined;
  return (await h.records.get(psid))?.clinical?.items;
}

async function gapCount(): Promise<number> {
  const text = await h.registry.getSingleMetricAsString('cw_fhir_event_gaps_total');
  const line = text.split('\n').find((l) => l.startsWith('cw_fhir_event_gaps_total'));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

function tracker() {
  return new EventTracker({ redis: h.inspect, prefix: h.prefix });
}

describe('POST /v1/fhir/notifications', () => {
  beforeEach(async () => {
    h = await startFhirHarness();
  });

  it('answers a handshake 200 and changes no record', async () => {
    const before = await h.snapshot();
    const res = await post(
      r4Notification({ subscription: SUB, type: 'handshake', eventsSince: 0 }),
    );
    expect(res.statusCode).toBe(200);
    const after = await h.snapshot();
    // Only the subscription's own tracking key is new: no crosswalk entry, no record, no job.
    const added = [...after.keys()].filter((k) => !before.has(k));
    expect(added).toHaveLength(1);
    expect(added[0]).toContain(':fhirsub:');
    expect(await tracker().lastEvent(SUB)).toBe(0);
    expect(h.fhir.seen).toEqual([]);
  });

  it('records the last heartbeat per subscription', async () => {
    const res = await post(
      r4Notification({ subscription: SUB, type: 'heartbeat', eventsSince: 0 }),
    );
    expect(res.statusCode).toBe(200);
    const at = await tracker().lastHeartbeat(SUB);
    expect(at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await tracker().lastHeartbeat('https://ehr.example.org/fhir/Subscription/other')).toBe(
      undefined,
    );
  });

  it('applies a full-resource R4 backport notification', async () => {
    const res = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/c1' }],
        resources: [condition('c1', 'pat-1'), hba1c('o1', 'pat-1', 7.2)],
      }),
      { ...FHIR_JSON, 'content-type': 'application/json' },
    );
    expect(res.statusCode).toBe(200);
    const got = await items('pat-1');
    expect(got?.['fhir:Condition/c1']).toMatchObject({
      kind: 'condition',
      fhirId: 'Condition/c1',
      source: 'fhir',
      status: 'active',
      problemList: true,
      effectiveAt: '2020-03-04',
      codings: [
        { system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' },
        { system: 'http://snomed.info/sct', code: '44054006' },
      ],
    });
    expect(got?.['fhir:Observation/o1']).toMatchObject({
      kind: 'observation',
      value: 7.2,
      unit: '%',
      interpretation: 'H',
      referenceRange: '4-5.6',
      effectiveAt: '2025-12-01T09:00:00Z',
    });
    const stored = JSON.stringify(got);
    expect(stored).not.toContain('secret note text');
    expect(stored).not.toContain('Narrative');
    expect(stored).not.toContain('free text');
    expect(await tracker().lastEvent(SUB)).toBe(1);
    // A result of the record: the patient's queries are scheduled as with any feed.
  });

  it('applies an R4B/R5 SubscriptionStatus notification', async () => {
    const res = await post(
      r5Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Observation/o2' }],
        resources: [hba1c('o2', 'pat-2', 6.1)],
      }),
    );
    expect(res.statusCode).toBe(200);
    expect((await items('pat-2'))?.['fhir:Observation/o2']).toMatchObject({ value: 6.1 });
  });

  it('fetches the focus of an id-only notification from the FHIR server, with the token', async () => {
    h.fhir.put(condition('c2', 'pat-3'));
    const res = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/c2' }],
      }),
    );
    expect(res.statusCode).toBe(200);
    expect(h.fhir.calls('Condition/c2')).toEqual([
      { method: 'GET', path: 'Condition/c2', query: {}, authorized: true },
    ]);
    expect((await items('pat-3'))?.['fhir:Condition/c2']).toMatchObject({ kind: 'condition' });
  });

  it('reads the Patient a notification does not carry, so that the record can be assembled', async () => {
    h.fhir.put(condition('c4', 'pat-4'));
    h.fhir.put({ resourceType: 'Patient', id: 'pat-4', birthDate: '1961-04-12', gender: 'female' });
    const res = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/c4' }],
      }),
    );
    expect(res.statusCode).toBe(200);
    expect(h.fhir.calls('Patient/pat-4')).toHaveLength(1);
    const psid = await h.crosswalk.find('pat-4');
    const clinical = (await h.records.get(psid ?? ''))?.clinical;
    expect(clinical?.patient).toMatchObject({ birthDate: '1961-04-12', gender: 'female' });
    expect(clinical?.items['fhir:Condition/c4']).toBeDefined();
  });

  it('removes an entered-in-error Condition', async () => {
    const send = (resource: Record<string, unknown>, n: number) =>
      post(
        r4Notification({
          subscription: SUB,
          type: 'event-notification',
          eventsSince: n,
          events: [{ n, focus: 'Condition/c7' }],
          resources: [resource],
        }),
      );
    expect((await send(condition('c7', 'pat-7'), 1)).statusCode).toBe(200);
    expect((await items('pat-7'))?.['fhir:Condition/c7']).toBeDefined();
    const wrong = condition('c7', 'pat-7', {
      verificationStatus: { coding: [{ code: 'entered-in-error' }] },
    });
    expect((await send(wrong, 2)).statusCode).toBe(200);
    expect((await items('pat-7'))?.['fhir:Condition/c7']).toBeUndefined();
  });

  it('processes the Inferno example notifications (Encounter focus: nothing to map or fetch)', async () => {
    const full = await post(fixture('full_resource_notification_bundle_example.json'));
    expect(full.statusCode).toBe(200);
    const idOnly = await post(fixture('id_only_notification_bundle_example.json'));
    expect(idOnly.statusCode).toBe(200);
    expect(h.fhir.seen).toEqual([]);
    expect(await tracker().lastEvent('https://fhirserver.org/fhir/Subscription/123')).toBe(1);
  });

  it('detects a gap, asks $status and $events, and applies the missed events', async () => {
    expect(
      (await post(r4Notification({ subscription: SUB, type: 'handshake', eventsSince: 0 })))
        .statusCode,
    ).toBe(200);
    const first = r4Notification({
      subscription: SUB,
      type: 'event-notification',
      eventsSince: 1,
      events: [{ n: 1, focus: 'Condition/e1' }],
      resources: [condition('e1', 'pat-g')],
    });
    expect((await post(first)).statusCode).toBe(200);
    expect(await gapCount()).toBe(0);

    // Events 2 and 3 never arrive; the server still has them.
    h.fhir.put(condition('e2', 'pat-g'));
    h.fhir.put(hba1c('e3', 'pat-g', 8.4));
    h.fhir.addEvent('sub-1', { eventNumber: 1, focus: 'Condition/e1' });
    h.fhir.addEvent('sub-1', { eventNumber: 2, focus: 'Condition/e2' });
    h.fhir.addEvent('sub-1', { eventNumber: 3, focus: 'Observation/e3' });
    h.fhir.addEvent('sub-1', { eventNumber: 4, focus: 'Condition/e4' });

    const fourth = r4Notification({
      subscription: SUB,
      type: 'event-notification',
      eventsSince: 4,
      events: [{ n: 4, focus: 'Condition/e4' }],
      resources: [condition('e4', 'pat-g')],
    });
    const res = await post(fourth);
    expect(res.statusCode).toBe(200);
    expect(await gapCount()).toBe(1);
    expect(h.fhir.calls('Subscription/sub-1/$status')).toHaveLength(1);
    expect(h.fhir.calls('Subscription/sub-1/$events')).toEqual([
      {
        method: 'GET',
        path: 'Subscription/sub-1/$events',
        query: { eventsSinceNumber: '2', eventsUntilNumber: '3' },
        authorized: true,
      },
    ]);
    const got = await items('pat-g');
    expect(Object.keys(got ?? {}).sort()).toEqual([
      'fhir:Condition/e1',
      'fhir:Condition/e2',
      'fhir:Condition/e4',
      'fhir:Observation/e3',
    ]);
    expect(await tracker().lastEvent(SUB)).toBe(4);
    // The gap is logged by hashed subscription, without contents.
    const gapLine = h.logLines.find((l) => l.includes('fhir subscription event gap'));
    expect(gapLine).toBeDefined();
    expect(gapLine).not.toContain('sub-1');
    expect(JSON.parse(gapLine as string)).toMatchObject({ expected: 2, missing: 2 });
  });

  it('counts a gap and still applies the notification when $events is not offered', async () => {
    h.fhir.noEventsOperation.add('sub-1');
    await post(r4Notification({ subscription: SUB, type: 'handshake', eventsSince: 0 }));
    const res = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 3,
        events: [{ n: 3, focus: 'Condition/u3' }],
        resources: [condition('u3', 'pat-u')],
      }),
    );
    expect(res.statusCode).toBe(200);
    expect(await gapCount()).toBe(1);
    expect(h.fhir.calls('$status')).toHaveLength(1);
    expect(h.fhir.calls('$events')).toHaveLength(1);
    expect((await items('pat-u'))?.['fhir:Condition/u3']).toBeDefined();
  });

  it('recovers events a heartbeat reveals as missed', async () => {
    await post(r4Notification({ subscription: SUB, type: 'handshake', eventsSince: 0 }));
    h.fhir.put(condition('hb1', 'pat-h'));
    h.fhir.addEvent('sub-1', { eventNumber: 1, focus: 'Condition/hb1' });
    const res = await post(
      r4Notification({ subscription: SUB, type: 'heartbeat', eventsSince: 1 }),
    );
    expect(res.statusCode).toBe(200);
    expect(await gapCount()).toBe(1);
    expect(h.fhir.calls('$events')[0]?.query).toEqual({
      eventsSinceNumber: '1',
      eventsUntilNumber: '1',
    });
    expect((await items('pat-h'))?.['fhir:Condition/hb1']).toBeDefined();
    expect(await tracker().lastEvent(SUB)).toBe(1);
  });

  it.each([
    ['not a history Bundle', { resourceType: 'Bundle', type: 'collection', entry: [{}] }],
    [
      'entry 0 is not a status',
      { resourceType: 'Bundle', type: 'history', entry: [{ resource: condition('x', 'p') }] },
    ],
    ['no type', r4Notification({ subscription: SUB, type: 'bogus' })],
    [
      'a resource of the wrong shape',
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/bad' }],
        resources: [
          condition('ok', 'pat-bad'),
          { ...condition('bad', 'pat-bad'), code: 'not a CodeableConcept' },
        ],
      }),
    ],
    [
      'a subject that is not a Patient',
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/g1' }],
        resources: [condition('g1', 'x', { subject: { reference: 'Group/1' } })],
      }),
    ],
  ])('answers 422 and changes nothing for a malformed notification: %s', async (_name, body) => {
    const before = await h.snapshot();
    const res = await post(body);
    expect(res.statusCode).toBe(422);
    const detail = res.json<{ detail: { loc: unknown[]; msg: string; type: string }[] }>().detail;
    expect(detail.length).toBeGreaterThan(0);
    expect(detail[0]?.loc[0]).toBe('body');
    expect(await h.snapshot()).toEqual(before);
    expect(await h.crosswalk.find('pat-bad')).toBeUndefined();
  });

  it('refuses other media types (415) and missing tokens (401)', async () => {
    const body = r4Notification({ subscription: SUB, type: 'handshake', eventsSince: 0 });
    expect((await post(body, { ...FHIR_JSON, 'content-type': 'text/xml' })).statusCode).toBe(415);
    expect((await post(body, { 'content-type': 'application/fhir+json' })).statusCode).toBe(401);
  });
});

describe('POST /v1/fhir/notifications with patient_identifier_system', () => {
  beforeEach(async () => {
    h = await startFhirHarness({ patientIdentifierSystem: 'urn:oid:1.2.3.4.5' });
  });

  it('fetches the subject Patient and uses the identifier of that system', async () => {
    h.fhir.put({
      resourceType: 'Patient',
      id: 'p9',
      identifier: [
        { system: 'urn:other', value: 'OTHER-1' },
        { system: 'urn:oid:1.2.3.4.5', value: 'MRN-9' },
      ],
    });
    const res = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/c9' }],
        resources: [condition('c9', 'p9')],
      }),
    );
    expect(res.statusCode).toBe(200);
    expect(h.fhir.calls('Patient/p9')).toHaveLength(1);
    expect((await items('MRN-9'))?.['fhir:Condition/c9']).toBeDefined();
    expect(await h.crosswalk.find('p9')).toBeUndefined();
  });
});

describe('POST /v1/fhir/notifications without a FHIR server', () => {
  beforeEach(async () => {
    h = await startFhirHarness({ fhirBaseUrl: null });
  });

  it('answers an id-only notification 503 with Retry-After and changes nothing', async () => {
    const before = await h.snapshot();
    const res = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/c1' }],
      }),
    );
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('30');
    expect(await h.snapshot()).toEqual(before);
  });
});

describe('POST /v1/fhir/notifications when the FHIR server refuses the token', () => {
  beforeEach(async () => {
    h = await startFhirHarness({ fhirToken: 'a-token-the-server-does-not-know' });
  });

  it('answers 503 with Retry-After, changes nothing and logs no token', async () => {
    h.fhir.put(condition('c1', 'pat-t'));
    const before = await h.snapshot();
    const res = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/c1' }],
      }),
    );
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('30');
    expect(h.fhir.calls('Condition/c1')).toEqual([
      { method: 'GET', path: 'Condition/c1', query: {}, authorized: false },
    ]);
    expect(await h.snapshot()).toEqual(before);
    expect(h.logLines.join('\n')).not.toContain('a-token-the-server-does-not-know');
  });
});

describe('POST /v1/fhir/notifications, focus gone from the FHIR server', () => {
  beforeEach(async () => {
    h = await startFhirHarness();
  });

  it('skips a focus the server no longer has (404) and answers 200', async () => {
    const res = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/deleted' }],
      }),
    );
    expect(res.statusCode).toBe(200);
    expect(h.fhir.calls('Condition/deleted')).toHaveLength(1);
    expect(await tracker().lastEvent(SUB)).toBe(1);
  });
});

describe('POST /v1/fhir/* while Redis is unreachable', () => {
  beforeEach(async () => {
    h = await startFhirHarness({ redisUrl: 'redis://127.0.0.1:1' });
  });

  it('answers 503 with Retry-After', async () => {
    const notification = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/c1' }],
        resources: [condition('c1', 'pat-r')],
      }),
    );
    expect(notification.statusCode).toBe(503);
    expect(notification.headers['retry-after']).toBe('5');
    const bundle = await h.app.inject({
      method: 'POST',
      url: '/v1/fhir/Bundle',
      headers: FHIR_JSON,
      payload: JSON.stringify({
        resourceType: 'Bundle',
        type: 'collection',
        entry: [{ resource: { resourceType: 'Patient', id: 'pat-r' } }],
      }),
    });
    expect(bundle.statusCode).toBe(503);
    expect(bundle.headers['retry-after']).toBe('5');
  });
});

describe('POST /v1/fhir/notifications, a malformed notification after a gap', () => {
  beforeEach(async () => {
    h = await startFhirHarness();
  });

  it('is refused (422) before any recovery or change', async () => {
    await post(r4Notification({ subscription: SUB, type: 'handshake', eventsSince: 0 }));
    h.fhir.put(condition('m1', 'pat-m'));
    h.fhir.addEvent('sub-1', { eventNumber: 1, focus: 'Condition/m1' });
    const before = await h.snapshot();
    const res = await post(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 2,
        events: [{ n: 2, focus: 'Condition/m2' }],
        resources: [condition('m2', 'x', { subject: { reference: 'Group/9' } })],
      }),
    );
    expect(res.statusCode).toBe(422);
    expect(h.fhir.seen).toEqual([]);
    expect(await h.snapshot()).toEqual(before);
    expect(await gapCount()).toBe(0);
  });
});
