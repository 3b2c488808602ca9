import { ccsrCategoriesForIcd10 } from '../ccsr/icd10-ccsr-map.ts';
import { CODE_SYSTEMS, type ClinicalRecord } from '../records/clinical-record.ts';

/** Which CCSR categories of a problem's ICD-10-CM code become presets. */
export type ProblemListMode = 'all' | 'outpatient_default';

/** Statuses of a problem that is still there (HL7 PRB-14, FHIR clinicalStatus); none given = active. */
const ACTIVE = new Set(['active', 'recurrence', 'relapse']);

/**
 * The CCSR categories the patient's active problems call for: every active condition (problem
 * list entry or diagnosis) with an ICD-10-CM coding, mapped through the CCSR v2023.1 table.
 */
export function problemListCategories(record: ClinicalRecord, mode: ProblemListMode): string[] {
  const categories = new Set<string>();
  for (const item of Object.values(record.items)) {
    if (item.kind !== 'condition') continue;
    if (item.status !== undefined && !ACTIVE.has(item.status.toLowerCase())) continue;
    for (const coding of item.codings) {
      if (coding.system !== CODE_SYSTEMS.icd10cm) continue;
      for (const category of ccsrCategoriesForIcd10(coding.code, mode)) categories.add(category);
    }
  }
  return [...categories].sort();
}
