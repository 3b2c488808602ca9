import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';

/**
 * Synthetic FHIR Bulk Data NDJSON for the `bulk_import` scenario: per patient one Patient, three
 * active Conditions coded in ICD-10-CM (codes the shipped CCSR map covers, so each patient opens
 * queries from its problem list), four Observations (LOINC, valueQuantity) and one Encounter (a
 * type the record does not use): nine resources. Made up by the bench; no real person.
 */

export const ICD10_CM = 'http://hl7.org/fhir/sid/icd-10-cm';
export const LOINC = 'http://loinc.org';
export const MRN_SYSTEM = 'urn:oid:2.16.840.1.113883.19.5.99999.1';

/** ICD-10-CM codes each mapped to at least one CCSR v2023.1 category (checked by the unit test). */
export const PROBLEMS: readonly { code: string; display: string }[] = [
  { code: 'E11.9', display: 'Type 2 diabetes mellitus without complications' },
  { code: 'I10', display: 'Essential (primary) hypertension' },
  { code: 'J45.909', display: 'Unspecified asthma, uncomplicated' },
  { code: 'E78.5', display: 'Hyperlipidemia, unspecified' },
  { code: 'F32.9', display: 'Major depressive disorder, single episode, unspecified' },
  { code: 'E66.9', display: 'Obesity, unspecified' },
  { code: 'I25.10', display: 'Atherosclerotic heart disease of native coronary artery' },
  { code: 'J44.9', display: 'Chronic obstructive pulmonary disease, unspecified' },
  { code: 'K21.9', display: 'Gastro-esophageal reflux disease without esophagitis' },
  { code: 'N18.30', display: 'Chronic kidney disease, stage 3 unspecified' },
];

const LABS: readonly { code: string; display: string; unit: string; base: number; step: number }[] =
  [
    { code: '4548-4', display: 'Hemoglobin A1c', unit: '%', base: 5.4, step: 0.1 },
    { code: '2345-7', display: 'Glucose', unit: 'mg/dL', base: 80, step: 3 },
    { code: '8480-6', display: 'Systolic blood pressure', unit: 'mm[Hg]', base: 105, step: 2 },
    { code: '2093-3', display: 'Cholesterol', unit: 'mg/dL', base: 150, step: 4 },
    { code: '39156-5', display: 'Body mass index', unit: 'kg/m2', base: 19, step: 0.5 },
    { code: '2160-0', display: 'Creatinine', unit: 'mg/dL', base: 0.6, step: 0.05 },
  ];

export const CONDITIONS_PER_PATIENT = 3;
export const OBSERVATIONS_PER_PATIENT = 4;
/** Patient + Conditions + Observations + Encounter. */
export const RESOURCES_PER_PATIENT = 1 + CONDITIONS_PER_PATIENT + OBSERVATIONS_PER_PATIENT + 1;

/** The logical id of the `i`-th patient. */
export const patientId = (i: number) => `bulk-${String(i).padStart(7, '0')}`;

const pad2 = (n: number) => String(n).padStart(2, '0');
const dayOf = (i: number, yearsAgo: number) =>
  `${2025 - yearsAgo}-${pad2(1 + (i % 12))}-${pad2(1 + (i % 28))}`;

export function patientLine(i: number): string {
  return JSON.stringify({
    resourceType: 'Patient',
    id: patientId(i),
    identifier: [{ system: MRN_SYSTEM, value: `MRN${String(i).padStart(8, '0')}` }],
    gender: i % 2 === 0 ? 'female' : 'male',
    birthDate: dayOf(i, 20 + (i % 65)),
  });
}

/** The `k`-th Condition of patient `i` (k < 3: three distinct problems per patient). */
export function conditionLine(i: number, k: number): string {
  const problem = PROBLEMS[(i + k) % PROBLEMS.length] ?? PROBLEMS[0];
  return JSON.stringify({
    resourceType: 'Condition',
    id: `${patientId(i)}-c${k}`,
    clinicalStatus: {
      coding: [
        { system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'active' },
      ],
    },
    verificationStatus: {
      coding: [
        {
          system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status',
          code: 'confirmed',
        },
      ],
    },
    category: [
      {
        coding: [
          {
            system: 'http://terminology.hl7.org/CodeSystem/condition-category',
            code: 'problem-list-item',
          },
        ],
      },
    ],
    code: { coding: [{ system: ICD10_CM, ...problem }], text: problem?.display },
    subject: { reference: `Patient/${patientId(i)}` },
    onsetDateTime: `${dayOf(i + k, 1 + ((i + k) % 10))}T09:00:00Z`,
    recordedDate: `${dayOf(i + k, 1 + ((i + k) % 10))}T09:30:00Z`,
  });
}

/** The `k`-th Observation of patient `i` (k < 4). */
export function observationLine(i: number, k: number): string {
  const lab = LABS[(i + k) % LABS.length] ?? LABS[0];
  const value = Math.round(((lab?.base ?? 0) + ((i * 7 + k) % 20) * (lab?.step ?? 0)) * 100) / 100;
  return JSON.stringify({
    resourceType: 'Observation',
    id: `${patientId(i)}-o${k}`,
    status: 'final',
    category: [
      {
        coding: [
          {
            system: 'http://terminology.hl7.org/CodeSystem/observation-category',
            code: 'laboratory',
          },
        ],
      },
    ],
    code: { coding: [{ system: LOINC, code: lab?.code, display: lab?.display }] },
    subject: { reference: `Patient/${patientId(i)}` },
    effectiveDateTime: `${dayOf(i + k, 0)}T08:00:00Z`,
    valueQuantity: {
      value,
      unit: lab?.unit,
      system: 'http://unitsofmeasure.org',
      code: lab?.unit,
    },
  });
}

export function encounterLine(i: number): string {
  return JSON.stringify({
    resourceType: 'Encounter',
    id: `${patientId(i)}-e0`,
    status: 'finished',
    class: {
      system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode',
      code: 'AMB',
      display: 'ambulatory',
    },
    subject: { reference: `Patient/${patientId(i)}` },
    period: { start: `${dayOf(i, 0)}T08:00:00Z`, end: `${dayOf(i, 0)}T08:30:00Z` },
  });
}

/** Each file of the export: its name and the lines of patient `i`. */
const FILES: readonly { name: string; type: string; linesOf: (i: number) => string[] }[] = [
  { name: 'Patient.ndjson', type: 'Patient', linesOf: (i) => [patientLine(i)] },
  {
    name: 'Condition.ndjson',
    type: 'Condition',
    linesOf: (i) => Array.from({ length: CONDITIONS_PER_PATIENT }, (_, k) => conditionLine(i, k)),
  },
  {
    name: 'Observation.ndjson',
    type: 'Observation',
    linesOf: (i) =>
      Array.from({ length: OBSERVATIONS_PER_PATIENT }, (_, k) => observationLine(i, k)),
  },
  { name: 'Encounter.ndjson', type: 'Encounter', linesOf: (i) => [encounterLine(i)] },
];

/** What {@link writeBulkNdjson} wrote. */
export interface BulkNdjsonExport {
  folder: string;
  patients: number;
  /** Lines written, by resource type. */
  resources: Record<string, number>;
  total_resources: number;
  bytes: number;
}

/** Writes `text`, waiting for the stream to drain when its buffer is full (backpressure). */
async function write(stream: WriteStream, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain');
}

/** Patients whose lines are joined into one write. */
const PATIENTS_PER_WRITE = 256;

/**
 * Writes the export of `patients` patients into `folder` (one `<Type>.ndjson` per type), streamed:
 * at most {@link PATIENTS_PER_WRITE} patients' lines are in memory at once, whatever the count.
 */
export async function writeBulkNdjson(folder: string, patients: number): Promise<BulkNdjsonExport> {
  const resources: Record<string, number> = {};
  let bytes = 0;
  for (const file of FILES) {
    const path = join(folder, file.name);
    const stream = createWriteStream(path);
    let lines = 0;
    try {
      for (let start = 0; start < patients; start += PATIENTS_PER_WRITE) {
        const chunk: string[] = [];
        for (let i = start; i < Math.min(patients, start + PATIENTS_PER_WRITE); i++) {
          for (const line of file.linesOf(i)) chunk.push(line);
        }
        lines += chunk.length;
        await write(stream, `${chunk.join('\n')}\n`);
      }
    } finally {
      stream.end();
      await finished(stream);
    }
    resources[file.type] = lines;
    bytes += (await stat(path)).size;
  }
  const total = Object.values(resources).reduce((sum, n) => sum + n, 0);
  return { folder, patients, resources, total_resources: total, bytes };
}
