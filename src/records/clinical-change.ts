import type { ClinicalItem, PatientIdentityFacets } from './clinical-record.ts';

/** An item as a feed reports it; the store stamps `version` (and keeps `source` as given). */
export type ReportedItem = Omit<ClinicalItem, 'version'>;

/** One change a feed message makes to a patient's clinical record. */
export type ClinicalChange =
  /** Adds the item, or replaces the one with the same key. */
  | { type: 'upsert'; item: ReportedItem }
  /** Removes the item with this key (a deleted problem, an entered-in-error result). */
  | { type: 'remove'; key: string }
  /** Merges identity facets (demographics and identifiers); lists are unioned. */
  | { type: 'patient'; facets: Partial<PatientIdentityFacets> }
  /** Replaces every item (a whole-patient Bundle); identity facets are merged as with `patient`. */
  | { type: 'replace'; items: ReportedItem[]; facets?: Partial<PatientIdentityFacets> };
