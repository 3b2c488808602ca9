import { readdirSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FHIR_JSON, startFhirHarness, type FhirHarness } from './support/fhir-harness.ts';
import { FIXTURES, condition, fixture, r4Notification } from './support/notifications.ts';

let h: FhirHarness;

beforeEach(async () => {
  h = await startFhirHarness();
});
afterEach(async () => {
  await h.close();
});

function postBundle(body: unknown, headers: Record<string, string> = FHIR_JSON) {
  return h.app.inject({
    method: 'POST',
    url: '/v1/fhir/Bundle',
    headers,
    payload: JSON.stringify(body),
  });
}

interface Entry {
  resource: Record<string, unknown> & { resourceType: string; id: string };
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

  it.each(SYNTHEA)('replaces the record from the Synthea Bundle %s (202)', async (file) => {
    const bundle = fixture(file);
    const res = await postBundle(bundle);
    expect(res.statusCode).toBe(202);
    const answer = res.json<{ patient_service_id: string; version: number }>();
    expect(answer).toEqual({ patient_service_id: expect.any(String), version: 1 });
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

  it('replaces, not merges: a later Bundle with fewer resources drops the rest', async () => {
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
      entry: [
        patientEntry,
        { resource: condition('only-one', 'x', { subject: { reference: fullUrl } }) },
      ],
    };
    const second = await postBundle(smaller);
    expect(second.statusCode).toBe(202);
    expect(second.json()).toEqual({ patient_service_id: psid, version: 2 });
    const items = (await h.records.get(psid))?.clinical?.items ?? {};
    expect(Object.keys(items)).toEqual(['fhir:Condition/only-one']);
  });

  it.each([
    [
      'no Patient',
      { resourceType: 'Bundle', type: 'collection', entry: [{ resource: condition('c', 'p') }] },
    ],
    [
      'two Patients',
      {
        resourceType: 'Bundle',
        type: 'collection',
        entry: [
          { resource: { resourceType: 'Patient', id: 'a' } },
          { resource: { resourceType: 'Patient', id: 'b' } },
        ],
      },
    ],
    [
      'a history Bundle',
      {
        resourceType: 'Bundle',
        type: 'history',
        entry: [{ resource: { resourceType: 'Patient', id: 'a' } }],
      },
    ],
    [
      "another patient's resource",
      {
        resourceType: 'Bundle',
        type: 'collection',
        entry: [
          { resource: { resourceType: 'Patient', id: 'a' } },
          { resource: condition('c', 'someone-else') },
        ],
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
