import type { AssembledPatient, AssembleNode } from '../src/interface/assembled-patient.ts';

/** A made-up patient of the demo: no real person, no identifiers beyond a synthetic MRN. */
export interface DemoPatient {
  patientId: string;
  age: number;
  gender: string;
  /** ICD-10-CM codes of the problem list, with the CCSR category each is preset for. */
  problems: { code: string; display: string; category: string }[];
}

export const DEMO_PATIENTS: readonly DemoPatient[] = [
  {
    patientId: 'DEMO-MRN-0001',
    age: 58,
    gender: 'female',
    problems: [
      {
        code: 'E11.9',
        display: 'Type 2 diabetes mellitus without complications',
        category: 'END002',
      },
      { code: 'I10', display: 'Essential (primary) hypertension', category: 'CIR007' },
    ],
  },
  {
    patientId: 'DEMO-MRN-0002',
    age: 34,
    gender: 'male',
    problems: [
      { code: 'J45.909', display: 'Unspecified asthma, uncomplicated', category: 'RSP009' },
      { code: 'E66.9', display: 'Obesity, unspecified', category: 'END009' },
    ],
  },
  {
    patientId: 'DEMO-MRN-0003',
    age: 46,
    gender: 'female',
    problems: [
      { code: 'F32.9', display: 'Major depressive disorder, single episode', category: 'MBD002' },
    ],
  },
  {
    patientId: 'DEMO-MRN-0004',
    age: 67,
    gender: 'male',
    problems: [
      { code: 'E78.5', display: 'Hyperlipidemia, unspecified', category: 'END010' },
      { code: 'I10', display: 'Essential (primary) hypertension', category: 'CIR007' },
    ],
  },
  {
    patientId: 'DEMO-MRN-0005',
    age: 90,
    gender: 'female',
    problems: [
      { code: 'N18.3', display: 'Chronic kidney disease, stage 3', category: 'GEN003' },
      {
        code: 'E11.9',
        display: 'Type 2 diabetes mellitus without complications',
        category: 'END002',
      },
    ],
  },
  {
    patientId: 'DEMO-MRN-0006',
    age: 52,
    gender: 'male',
    problems: [{ code: 'I10', display: 'Essential (primary) hypertension', category: 'CIR007' }],
  },
];

/** The patient's record after `revision` changes: a new HbA1c and blood pressure each time. */
export function demoRecord(patient: DemoPatient, revision: number): AssembledPatient {
  const conditions: AssembleNode[] = patient.problems.map((problem, i) => ({
    id: `cond-${i}`,
    node_type: 'condition',
    notable: true,
    fhir_id: `Condition/${patient.patientId}-c${i}`,
    coding: [
      { system: 'http://hl7.org/fhir/sid/icd-10-cm', code: problem.code, display: problem.display },
    ],
  }));
  const hba1c = 6.4 + ((revision * 7) % 25) / 10;
  const systolic = 118 + ((revision * 11) % 40);
  const observations: AssembleNode[] = [
    {
      id: 'obs-hba1c',
      node_type: 'observation',
      notable: hba1c >= 6.5,
      coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'Hemoglobin A1c' }],
      metadata: { value: Number(hba1c.toFixed(1)), unit: '%', days_before_assembly: 0 },
    },
    {
      id: 'obs-sbp',
      node_type: 'observation',
      notable: systolic >= 140,
      coding: [{ system: 'http://loinc.org', code: '8480-6', display: 'Systolic blood pressure' }],
      metadata: { value: systolic, unit: 'mm[Hg]', days_before_assembly: 0 },
    },
  ];
  return {
    nodes: [...conditions, ...observations],
    relationships: conditions.map((c) => ({ source_id: 'obs-hba1c', target_id: c.id })),
    demographics: { age: Math.min(patient.age, 90), gender: patient.gender, race: 'unknown' },
  };
}
