import type { AssembledPatient } from '../../src/interface/assembled-patient.ts';
import type { ReportedItem } from '../../src/records/clinical-change.ts';
import { CODE_SYSTEMS } from '../../src/records/clinical-record.ts';

/** A small, valid, de-identified assembled record (made up; no real patient). */
export const samplePatient: AssembledPatient = {
  nodes: [
    {
      id: 'n1',
      node_type: 'condition',
      notable: true,
      coding: [{ system: 'http://snomed.info/sct', code: '44054006', display: 'Diabetes type 2' }],
    },
    {
      id: 'n2',
      node_type: 'observation',
      notable: false,
      coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'HbA1c' }],
      metadata: { value: 7.9, unit: '%' },
    },
  ],
  relationships: [{ source_id: 'n2', target_id: 'n1' }],
  demographics: { age: 57, gender: 'female' },
};

/** A real CCSR v2023.1 category that fits the sample (diabetes without complication). */
export const SAMPLE_CATEGORY = 'END002';

/** An HL7 v2 DG1 diagnosis (ICD-10-CM `code`) as the clinical record keeps it. */
export const sampleDiagnosis = (code: string, status = 'active'): ReportedItem => ({
  key: `hl7:dg1:icd10cm:${code}`,
  kind: 'condition',
  codings: [{ system: CODE_SYSTEMS.icd10cm, code }],
  status,
  problemList: false,
  source: 'hl7v2',
});
