/**
 * The record updates the chaos suite sends: HTTP JSON record updates, HL7 v2 over MLLP (a
 * problem-list message first, then lab results) and FHIR Bundles. Each update of a patient changes
 * the record (a new HbA1c value), so each must lead to a query whose result reflects it. The one
 * category every update runs is END002 (E11.9 on the problem list, or `ccsr_categories` for JSON).
 */

export type Feed = 'json' | 'hl7' | 'fhir';

export const CATEGORY = 'END002';

/** One update as the sender knows it. */
export interface Update {
  /** The event id the pipeline reports in `triggered_by.event_ids`. */
  eventId: string;
  feed: Feed;
  /** The hospital's patient id (what result events carry as `patient_id`). */
  patientId: string;
  /** Position among this patient's updates (0 = first). */
  seq: number;
  /** HTTP body (json, fhir) or ER7 text (hl7). */
  body: string;
}

/** HL7 sending application: event ids are `hl7v2:<MSH-3>:<MSH-10>`. */
const HL7_APP = 'CHAOSEHR';

/**
 * The HbA1c value of a patient's `seq`th update: different for every (patient, update) up to 100
 * patients and 50 updates each, so that every query's submission body is distinct and a body seen
 * twice is a duplicate submission.
 */
export function hba1c(patientIndex: number, seq: number): number {
  return Math.round((5 + (patientIndex % 100) * 0.05 + (seq % 50) * 0.001) * 1000) / 1000;
}

export function jsonUpdate(
  run: string,
  patientId: string,
  patientIndex: number,
  seq: number,
): Update {
  const eventId = `json-${run}-${patientId}-${seq}`;
  const body = {
    patient_id: patientId,
    event_id: eventId,
    changes: ['Observation'],
    ccsr_categories: [CATEGORY],
    assembled_patient: {
      nodes: [
        {
          id: 'c1',
          node_type: 'condition',
          notable: true,
          coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }],
        },
        {
          id: 'o1',
          node_type: 'observation',
          notable: true,
          coding: [{ system: 'http://loinc.org', code: '4548-4' }],
          metadata: { value: hba1c(patientIndex, seq), unit: '%', seq },
        },
      ],
      relationships: [{ source_id: 'o1', target_id: 'c1' }],
      demographics: { age: 58, gender: 'female' },
    },
  };
  return { eventId, feed: 'json', patientId, seq, body: JSON.stringify(body) };
}

/** PID with a birth year per patient, so that first messages of two patients differ too. */
const pid = (patientId: string, patientIndex: number) =>
  // No assigning authority: the patient's key is the id alone (with one it would be `CHAOS|<id>`).
  `PID|1||${patientId}^^^^MR||Chaos^Patient||${1930 + (patientIndex % 60)}0101|F`;

/** The first message of a patient adds E11.9 to the problem list; later ones carry lab results. */
export function hl7Update(
  run: string,
  patientId: string,
  patientIndex: number,
  seq: number,
): Update {
  const controlId = `${run}-${patientId}-${seq}`;
  const msh = (type: string) =>
    `MSH|^~\\&|${HL7_APP}|HOSP|CW|HOSP|20260101120000||${type}|${controlId}|P|2.5.1`;
  const segments =
    seq === 0
      ? [
          msh('PPR^PC1'),
          pid(patientId, patientIndex),
          'PRB|AD|20260101120000|E11.9^^I10|PRB-1||||||||||ACTIVE',
        ]
      : [
          msh('ORU^R01'),
          pid(patientId, patientIndex),
          `OBR|1|${controlId}||4548-4^^LN|||20260101120000`,
          `OBX|1|NM|4548-4^^LN||${hba1c(patientIndex, seq)}|%|4.0-5.6|H|||F|||20260101120000`,
        ];
  return {
    eventId: `hl7v2:${HL7_APP}:${controlId}`,
    feed: 'hl7',
    patientId,
    seq,
    body: segments.join('\r'),
  };
}

export function fhirUpdate(
  run: string,
  patientId: string,
  patientIndex: number,
  seq: number,
): Update {
  const bundleId = `${run}-${patientId}-${seq}`;
  const subject = { reference: `Patient/${patientId}` };
  const bundle = {
    resourceType: 'Bundle',
    id: bundleId,
    type: 'collection',
    entry: [
      {
        resource: {
          resourceType: 'Patient',
          id: patientId,
          gender: 'male',
          birthDate: '1955-06-01',
        },
      },
      {
        resource: {
          resourceType: 'Condition',
          id: `${patientId}-dm`,
          subject,
          clinicalStatus: {
            coding: [
              {
                system: 'http://terminology.hl7.org/CodeSystem/condition-clinical',
                code: 'active',
              },
            ],
          },
          code: { coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }] },
        },
      },
      {
        resource: {
          resourceType: 'Observation',
          id: `${patientId}-a1c`,
          status: 'final',
          subject,
          code: { coding: [{ system: 'http://loinc.org', code: '4548-4' }] },
          valueQuantity: { value: hba1c(patientIndex, seq), unit: '%' },
        },
      },
    ],
  };
  return {
    eventId: `fhir:bundle:${bundleId}`,
    feed: 'fhir',
    patientId,
    seq,
    body: JSON.stringify(bundle),
  };
}

export const BUILDERS: Record<
  Feed,
  (run: string, patientId: string, patientIndex: number, seq: number) => Update
> = {
  json: jsonUpdate,
  hl7: hl7Update,
  fhir: fhirUpdate,
};
