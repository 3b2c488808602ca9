import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FHIR_JSON, startFhirHarness, type FhirHarness } from './support/fhir-harness.ts';
import { BUNDLE_MODE_TAG_SYSTEM } from '../../../src/ingest/fhir/fhir-ingest.ts';
import { FIXTURES, condition, fixture, r4Notification } from './support/notifications.ts';

let h: FhirHarness;

beforeEach(async () => {
  h = await startFhirHarness();
});
afterEach(async () => {
  await h.close();
});

function postBundle(body: unknown, headers: Record<string, string> = FHIR_JSON, query = '') {
  return h.app.inject({
    method: 'POST',
    url: `/v1/fhir/Bundle${query}`,
    headers,
    payload: JSON.stringify(body),
  });
}

interface Entry {
  resource: Record<string, unknown> & { resourceType: string; id: string };
}

async function ignoredCount(reason: string): Promise<number> {
  const text = await h.registry.metrics();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`cw_fhir_ignored_total{reason="${reason}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

/** A file of the public corpus (test/corpus/fhir, see its SOURCES.md). */
function corpusJson(name: string): Record<string, unknown> {
  const url = new URL(`../../corpus/fhir/${name}`, import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')) as Record<string, unknown>;
}

const SYNTHEA = readdirSync(FIXTURES).filter((f) => /^[A-Z][a-z]+_[A-Z][a-z]+_.*\.json$/.test(f));

function resourcesOf(bundle: Record<string, unknown>, type: string) {
  return (bundle.entry as Entry[]).map((e) => e.resource).filter((r) => r.resourceType === type);
}

function isHba1c(r: Record<string, unknown>): boolean {
  const coding = (r.code as { coding?: { code?: string }[] } | undefined)?.coding ?? [];
  return coding.some((c) => c.code === '4548-4');
}

describe('POST /v1/fhir/Bundle', () => {
  it('finds the three Synthea fixtures', () => {
    expect(SYNTHEA).toHaveLength(3);
  });

  it.each(SYNTHEA)('applies the Synthea Bundle %s (202)', async (file) => {
    const bundle = fixture(file);
    const res = await postBundle(bundle);
    expect(res.statusCode).toBe(202);
    const answer = res.json<{ patient_service_id: string; version: number }>();
    expect(answer).toEqual({
      mode: 'merge',
      patients: [{ patient_service_id: expect.any(String), version: 1, changed: true }],
      patient_service_id: expect.any(String),
      version: 1,
    });
    const [patient] = resourcesOf(bundle, 'Patient');
    expect(await h.crosswalk.find(patient?.id as string)).toBe(answer.patient_service_id);

    const clinical = (await h.records.get(answer.patient_service_id))?.clinical;
    const items = Object.values(clinical?.items ?? {});
    const conditions = items.filter((i) => i.kind === 'condition');
    expect(conditions.map((c) => c.fhirId).sort()).toEqual(
      resourcesOf(bundle, 'Condition')
        .map((c) => `Condition/${c.id}`)
        .sort(),
    );
    expect(
      conditions.every((c) => c.codings.some((x) => x.system === 'http://snomed.info/sct')),
    ).toBe(true);
    const a1c = items.filter(
      (i) => i.kind === 'observation' && i.codings.some((c) => c.code === '4548-4'),
    );
    expect(a1c).toHaveLength(resourcesOf(bundle, 'Observation').filter(isHba1c).length);
    for (const item of a1c) {
      expect(item).toMatchObject({ value: expect.any(Number), unit: '%', source: 'fhir' });
    }
    expect(items.filter((i) => i.kind === 'immunization')).toHaveLength(
      resourcesOf(bundle, 'Immunization').length,
    );
    expect(clinical?.patient.gender).toBe(patient?.gender);
    expect(clinical?.patient.birthDate).toBe(patient?.birthDate);
    expect(clinical?.patient.identifiers).toContain(patient?.id);
    expect(clinical?.patient.race.length).toBeGreaterThan(0);
  });

  it.each([
    ['?mode=replace', {}],
    ['meta.tag', { meta: { tag: [{ system: BUNDLE_MODE_TAG_SYSTEM, code: 'replace' }] } }],
  ])(
    'replaces when asked by %s: a later Bundle with fewer resources drops the rest',
    async (how, extra) => {
      const bundle = fixture(SYNTHEA[0] as string);
      const first = await postBundle(bundle);
      const psid = first.json<{ patient_service_id: string }>().patient_service_id;
      const patientEntry = (bundle.entry as Entry[]).find(
        (e) => e.resource.resourceType === 'Patient',
      );
      const fullUrl = (patientEntry as { fullUrl?: string }).fullUrl as string;
      const smaller = {
        resourceType: 'Bundle',
        type: 'collection',
        ...extra,
        entry: [
          patientEntry,
          { resource: condition('only-one', 'x', { subject: { reference: fullUrl } }) },
        ],
      };
      const second = await postBundle(smaller, FHIR_JSON, how === 'meta.tag' ? '' : how);
      expect(second.statusCode).toBe(202);
      expect(second.json()).toMatchObject({
        mode: 'replace',
        patient_service_id: psid,
        version: 2,
      });
      const items = (await h.records.get(psid))?.clinical?.items ?? {};
      expect(Object.keys(items)).toEqual(['fhir:Condition/only-one']);
    },
  );

  it('merges by default: a Bundle holding only demographics never wipes the record', async () => {
    const bundle = fixture(SYNTHEA[0] as string);
    const first = await postBundle(bundle);
    const psid = first.json<{ patient_service_id: string }>().patient_service_id;
    const before = Object.keys((await h.records.get(psid))?.clinical?.items ?? {}).sort();
    expect(before.length).toBeGreaterThan(1);
    const [patient] = resourcesOf(bundle, 'Patient');
    const demographicsOnly = {
      resourceType: 'Bundle',
      type: 'collection',
      entry: [{ resource: { ...patient, gender: 'other' } }],
    };
    const second = await postBundle(demographicsOnly);
    expect(second.statusCode).toBe(202);
    expect(second.json()).toMatchObject({ mode: 'merge', patient_service_id: psid, version: 2 });
    const after = await h.records.get(psid);
    expect(Object.keys(after?.clinical?.items ?? {}).sort()).toEqual(before);
    expect(after?.clinical?.patient.gender).toBe('other');
  });

  it('splits a Bundle of several patients: one record and one commit per patient', async () => {
    const bundle = {
      resourceType: 'Bundle',
      type: 'searchset',
      entry: [
        { resource: { resourceType: 'Patient', id: 'split-a', birthDate: '1950-01-02' } },
        { resource: { resourceType: 'Patient', id: 'split-b', birthDate: '1960-03-04' } },
        { resource: condition('ca', 'split-a') },
        { resource: condition('cb', 'split-b') },
        // Neither Patient in the Bundle: a third patient, applied all the same.
        { resource: condition('cc', 'split-c') },
        // A type we do not use: acknowledged and counted.
        {
          resource: {
            resourceType: 'Encounter',
            id: 'e1',
            subject: { reference: 'Patient/split-a' },
          },
        },
      ],
    };
    const res = await postBundle(bundle);
    expect(res.statusCode).toBe(202);
    const answer = res.json<{ patients: { patient_service_id: string; version: number }[] }>();
    expect(answer.patients).toHaveLength(3);
    expect(answer).not.toHaveProperty('patient_service_id');
    for (const [id, condition] of [
      ['split-a', 'ca'],
      ['split-b', 'cb'],
      ['split-c', 'cc'],
    ] as const) {
      const psid = await h.crosswalk.find(id);
      expect(answer.patients.map((p) => p.patient_service_id)).toContain(psid);
      const items = (await h.records.get(psid as string))?.clinical?.items ?? {};
      expect(Object.keys(items)).toEqual([`fhir:Condition/${condition}`]);
    }
    expect(
      (await h.records.get((await h.crosswalk.find('split-b')) as string))?.clinical?.patient
        .birthDate,
    ).toBe('1960-03-04');
    expect(await ignoredCount('resource_type')).toBe(1);
  });

  it('takes the FHIR R4 transaction example: resources applied, DELETE Patient/<id> purges, reads counted', async () => {
    // Patient 234, which the transaction deletes, is known here first.
    const known = await postBundle({
      resourceType: 'Bundle',
      type: 'collection',
      entry: [{ resource: { resourceType: 'Patient', id: '234', birthDate: '1970-01-01' } }],
    });
    expect(known.statusCode).toBe(202);
    expect(await h.crosswalk.find('234')).toBeDefined();

    const res = await postBundle(corpusJson('R4-Bundle-bundle-transaction.json'));
    expect(res.statusCode).toBe(202);
    // POST (ids from their urn:uuid fullUrls), PUT and conditional PUT: five Patients.
    expect(res.json<{ patients: unknown[] }>().patients).toHaveLength(5);
    for (const id of ['123', '123a', '61ebe359-bfdc-4613-8bf2-c5e300945f0a']) {
      expect(await h.crosswalk.find(id), id).toBeDefined();
    }
    expect(await h.crosswalk.find('234')).toBeUndefined();
    // DELETE Patient?identifier=123456 names nobody we can resolve; two GETs read nothing.
    expect(await ignoredCount('delete_unresolvable')).toBe(1);
    expect(await ignoredCount('bundle_read')).toBe(2);
    // The ValueSet/$lookup Parameters entry.
    expect(await ignoredCount('resource_type')).toBe(1);
  });

  it('takes a FHIR document (the R4 example): its Patient and the resources about it', async () => {
    const res = await postBundle(corpusJson('R4-Bundle-father.json'));
    expect(res.statusCode).toBe(202);
    const record = await h.records.get((await h.crosswalk.find('d1')) as string);
    expect(record?.clinical?.patient.birthDate).toBe('1955-01-06');
    const kinds = Object.values(record?.clinical?.items ?? {}).map((i) => i.kind);
    expect(kinds.sort()).toEqual(['allergy', 'medication', 'medication', 'observation']);
  });

  it.each([
    [
      'a DELETE whose url names no resource',
      {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          {
            resource: { resourceType: 'Patient', id: 'a' },
            request: { method: 'PUT', url: 'Patient/a' },
          },
          { request: { method: 'DELETE', url: 'not a reference' } },
        ],
      },
    ],
    [
      'an entry with neither a resource nor a request',
      {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [{ resource: { resourceType: 'Patient', id: 'a' } }, { fullUrl: 'Patient/b' }],
      },
    ],
  ])('answers 422 and changes nothing for %s', async (_name, body) => {
    const before = await h.snapshot();
    const res = await postBundle(body);
    expect(res.statusCode).toBe(422);
    expect(await h.snapshot()).toEqual(before);
  });

  it('answers 422 for an unknown mode and changes nothing', async () => {
    const before = await h.snapshot();
    const res = await postBundle(fixture(SYNTHEA[0] as string), FHIR_JSON, '?mode=wipe');
    expect(res.statusCode).toBe(422);
    expect(await h.snapshot()).toEqual(before);
  });

  it.each([
    [
      'a history Bundle',
      {
        resourceType: 'Bundle',
        type: 'history',
        entry: [{ resource: { resourceType: 'Patient', id: 'a' } }],
      },
    ],
    [
      'a malformed Observation',
      {
        resourceType: 'Bundle',
        type: 'collection',
        entry: [
          { resource: { resourceType: 'Patient', id: 'a' } },
          {
            resource: {
              resourceType: 'Observation',
              id: 'o',
              subject: { reference: 'Patient/a' },
              valueQuantity: { value: 'high' },
            },
          },
        ],
      },
    ],
    ['not a Bundle', { resourceType: 'Patient', id: 'a' }],
    // Its MessageHeader event (patient-link) is the message's meaning: not processed here.
    [
      'a message Bundle (the R4 example)',
      corpusJson('R4-Bundle-10bb101f-a121-4264-a920-67be9cb82c74.json'),
    ],
  ])('answers 422 and changes nothing for %s', async (_name, body) => {
    const before = await h.snapshot();
    const res = await postBundle(body);
    expect(res.statusCode).toBe(422);
    expect(res.json<{ detail: unknown[] }>().detail.length).toBeGreaterThan(0);
    expect(await h.snapshot()).toEqual(before);
  });
});

describe('privacy of the FHIR ingest logs', () => {
  const NAME_GIVEN = 'Zebedee';
  const NAME_FAMILY = 'Quackenbush';
  const MRN = 'MRN-55501234';
  const SSN = '999-12-3456';
  const BIRTH = '1961-07-23';
  const PHONE = '555-867-5309';
  const STREET = '42 Wallaby Way';
  const PLANTED = [NAME_GIVEN, NAME_FAMILY, MRN, SSN, BIRTH, PHONE, STREET, 'planted-patient-id'];

  const patient = {
    resourceType: 'Patient',
    id: 'planted-patient-id',
    text: { status: 'generated', div: `<div>${NAME_GIVEN} ${NAME_FAMILY}</div>` },
    identifier: [
      { system: 'urn:oid:2.16.840.1.113883.4.1', value: SSN },
      { system: 'urn:mrn', value: MRN },
    ],
    name: [{ given: [NAME_GIVEN], family: NAME_FAMILY }],
    birthDate: BIRTH,
    gender: 'female',
    telecom: [{ system: 'phone', value: PHONE }],
    address: [{ line: [STREET], city: 'Sydney', postalCode: '02139' }],
  };

  it('keeps the planted identity out of every log line, and in the record', async () => {
    const bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { fullUrl: 'urn:uuid:planted-patient-id', resource: patient },
        { resource: condition('pc1', 'planted-patient-id') },
      ],
    };
    const res = await postBundle(bundle);
    expect(res.statusCode).toBe(202);
    // A notification about the same patient, and two rejected ones quoting the identity.
    const note = r4Notification({
      subscription: 'https://ehr.example.org/fhir/Subscription/priv',
      type: 'event-notification',
      eventsSince: 5,
      events: [{ n: 5, focus: 'Patient/planted-patient-id' }],
      resources: [patient],
    });
    const post = (body: unknown, url = '/v1/fhir/notifications') =>
      h.app.inject({ method: 'POST', url, headers: FHIR_JSON, payload: JSON.stringify(body) });
    expect((await post(note)).statusCode).toBe(200);
    expect((await post({ ...patient, resourceType: 'Bundle' })).statusCode).toBe(422);
    expect(
      (
        await post(
          {
            resourceType: 'Bundle',
            type: 'transaction',
            entry: [{ resource: { ...patient, birthDate: 7 } }],
          },
          '/v1/fhir/Bundle',
        )
      ).statusCode,
    ).toBe(422);

    const psid = res.json<{ patient_service_id: string }>().patient_service_id;
    const facets = (await h.records.get(psid))?.clinical?.patient;
    expect(facets).toMatchObject({
      names: [`${NAME_GIVEN} ${NAME_FAMILY}`],
      birthDate: BIRTH,
      phones: [PHONE],
      identifiers: expect.arrayContaining([SSN, MRN, 'planted-patient-id']),
    });
    expect(facets?.addresses[0]).toContain(STREET);

    expect(h.logLines.some((l) => l.includes('"fhir bundle"'))).toBe(true);
    expect(h.logLines.some((l) => l.includes('"fhir notification"'))).toBe(true);
    const all = h.logLines.join('\n');
    for (const planted of PLANTED) expect(all).not.toContain(planted);
  });
});
