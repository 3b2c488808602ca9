import { afterEach, describe, expect, it } from 'vitest';
import { findProbableDuplicates } from '../../../src/identity/probable-duplicates.ts';
import { scanKeys } from '../../../src/queues/redis-client.ts';
import { samplePatient } from '../../support/sample-patient.ts';
import {
  FHIR_JSON,
  startFhirHarness,
  TOKEN,
  type FhirHarness,
} from '../fhir/support/fhir-harness.ts';
import { condition, r4Notification } from '../fhir/support/notifications.ts';

/**
 * One person arriving by HL7 v2 (POST /v1/hl7v2), a FHIR notification and a JSON update is one
 * patient under `identity.patient_key.hospital_mrn` (docs/clinical-feeds.md, "One key across
 * feeds"): the ingest app built by the composition root on real Redis, the FHIR Patient read from
 * a local FHIR server on a real socket.
 */

const MRN = 'MRN-0002';
const MRN_SYSTEM = 'urn:oid:2.16.840.1.113883.19.5';
const SUB = 'Subscription/one-key';
const AUTH = { authorization: `Bearer ${TOKEN}` };

const adt = (control: string) =>
  [
    `MSH|^~\\&|EHR|GOODHEALTH|CW|GOODHEALTH|20260101120000||ADT^A08|${control}|P|2.5.1`,
    `PID|1||${MRN}^^^GOODHEALTH^MR~999-00-0002^^^USSSA^SS||Doe^Jane||19690315|F`,
    'DG1|1||E11.9^Type 2 diabetes mellitus^I10||20260101|F',
  ].join('\r');

let h: FhirHarness;
afterEach(async () => {
  await h.close();
});

async function sendAll(): Promise<void> {
  const hl7 = await h.app.inject({
    method: 'POST',
    url: '/v1/hl7v2',
    headers: { ...AUTH, 'content-type': 'application/hl7-v2' },
    payload: adt('ONE-KEY-1'),
  });
  expect(hl7.statusCode).toBe(200);
  expect(hl7.body).toContain('MSA|AA|ONE-KEY-1');

  // The Patient on the FHIR server: its logical id is not the MRN; its identifier of the second
  // configured system is (the first system is tried first and the Patient has none).
  h.fhir.put({
    resourceType: 'Patient',
    id: 'fhir-logical-77',
    birthDate: '1969-03-15',
    identifier: [
      { system: 'urn:other', value: 'OTHER-77' },
      { system: MRN_SYSTEM, value: MRN },
    ],
  });
  const fhir = await h.app.inject({
    method: 'POST',
    url: '/v1/fhir/notifications',
    headers: FHIR_JSON,
    payload: r4Notification({
      subscription: SUB,
      type: 'event-notification',
      eventsSince: 1,
      events: [{ n: 1, focus: 'Condition/c-77' }],
      resources: [condition('c-77', 'fhir-logical-77')],
    }),
  });
  expect(fhir.statusCode).toBe(200);

  const json = await h.app.inject({
    method: 'POST',
    url: '/v1/record-updates',
    headers: { ...AUTH, 'content-type': 'application/json' },
    payload: { patient_id: MRN, ccsr_categories: ['END002'] },
  });
  expect(json.statusCode).toBe(202);
}

async function patientCount(): Promise<number> {
  return (await scanKeys(h.inspect, `${h.prefix}:xwr:*`)).length;
}

describe('identity.patient_key.hospital_mrn: one key across feeds', () => {
  it('HL7 v2, FHIR and JSON updates of one MRN make one patient that GET …/presets finds', async () => {
    h = await startFhirHarness({
      env: {
        MRN_HL7V2_AUTHORITIES: 'GOODHEALTH',
        MRN_FHIR_SYSTEMS: `urn:oid:1.2.3.999,${MRN_SYSTEM}`,
      },
    });
    await sendAll();

    const presets = await h.app.inject({
      method: 'GET',
      url: `/v1/patients/${MRN}/presets`,
      headers: AUTH,
    });
    expect(presets.statusCode).toBe(200);
    const psid = await h.crosswalk.find(MRN);
    expect(presets.json().patient_service_id).toBe(psid);
    expect(await patientCount()).toBe(1);
    expect(await h.crosswalk.find(`GOODHEALTH|${MRN}`)).toBeUndefined();
    expect(await h.crosswalk.find('fhir-logical-77')).toBeUndefined();
    // The one record holds what both clinical feeds sent.
    const items = Object.keys((await h.records.get(psid as string))?.clinical?.items ?? {});
    expect(items).toContain('fhir:Condition/c-77');
    expect(items.some((key) => key.startsWith('hl7:dg1:'))).toBe(true);
    const found = await findProbableDuplicates({
      redis: h.inspect,
      prefix: h.prefix,
      crosswalk: h.crosswalk,
    });
    expect(found.count).toMatchObject({ patients: 1, probable_duplicates: 0 });
  });

  it('without the setting, as before: the HL7 key is qualified, FHIR keys by the logical id', async () => {
    h = await startFhirHarness();
    // A JSON update for a patient without a record needs the record: it is sent whole here.
    const hl7 = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { ...AUTH, 'content-type': 'application/hl7-v2' },
      payload: adt('ONE-KEY-2'),
    });
    expect(hl7.body).toContain('MSA|AA|ONE-KEY-2');
    const json = await h.app.inject({
      method: 'POST',
      url: '/v1/record-updates',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: { patient_id: MRN, assembled_patient: samplePatient, ccsr_categories: ['END002'] },
    });
    expect(json.statusCode).toBe(202);
    expect(await h.crosswalk.find(`GOODHEALTH|${MRN}`)).toBeDefined();
    expect(await h.crosswalk.find(MRN)).toBeDefined();
    expect(await patientCount()).toBe(2);
    // The trap, counted: one probable duplicate, under the HL7 authority.
    const found = await findProbableDuplicates({
      redis: h.inspect,
      prefix: h.prefix,
      crosswalk: h.crosswalk,
    });
    expect(found.count).toEqual({
      patients: 2,
      probable_duplicates: 1,
      by_authority: { GOODHEALTH: 1 },
      unreadable: 0,
    });
  });

  it('keys a FHIR Patient by its identifier of the first configured system it has; none: 422, nothing stored', async () => {
    h = await startFhirHarness({ env: { MRN_FHIR_SYSTEMS: `urn:first,${MRN_SYSTEM}` } });
    const bundle = (identifier: { system: string; value: string }[]) => ({
      resourceType: 'Bundle',
      type: 'collection',
      entry: [
        { resource: { resourceType: 'Patient', id: 'p-88', birthDate: '1969-03-15', identifier } },
        { resource: condition('c-88', 'p-88') },
      ],
    });
    const post = (body: object) =>
      h.app.inject({ method: 'POST', url: '/v1/fhir/Bundle', headers: FHIR_JSON, payload: body });
    const both = await post(
      bundle([
        { system: MRN_SYSTEM, value: 'MRN-SECOND' },
        { system: 'urn:first', value: 'MRN-FIRST' },
      ]),
    );
    expect(both.statusCode).toBe(202);
    expect(both.json().patients[0].patient_service_id).toBe(await h.crosswalk.find('MRN-FIRST'));
    expect(await h.crosswalk.find('MRN-SECOND')).toBeUndefined();
    expect(await h.crosswalk.find('p-88')).toBeUndefined();

    const before = await h.snapshot();
    const none = await post(bundle([{ system: 'urn:other', value: 'OTHER-88' }]));
    expect(none.statusCode).toBe(422);
    expect(JSON.stringify(none.json())).toContain('identity.patient_key.hospital_mrn');
    expect(await h.snapshot()).toEqual(before);
  });
});
