import { z } from 'zod';

/** Code systems as FHIR names them; feeds map their own names (HL7 `I10`, `LN`, `SCT`) onto these. */
export const CODE_SYSTEMS = {
  icd10cm: 'http://hl7.org/fhir/sid/icd-10-cm',
  icd9cm: 'http://hl7.org/fhir/sid/icd-9-cm',
  snomed: 'http://snomed.info/sct',
  loinc: 'http://loinc.org',
  rxnorm: 'http://www.nlm.nih.gov/research/umls/rxnorm',
  cvx: 'http://hl7.org/fhir/sid/cvx',
} as const;

export const ITEM_KINDS = [
  'condition',
  'observation',
  'medication',
  'procedure',
  'care_plan',
  'allergy',
  'immunization',
] as const;
export type ItemKind = (typeof ITEM_KINDS)[number];

const CodingSchema = z.object({
  system: z.string().min(1),
  code: z.string().min(1),
  display: z.string().optional(),
});

/**
 * One fact of the patient's record, as a feed reported it. Free text (notes, comments) is never
 * kept; dates are kept here (at rest, encrypted) and become "days before assembly" when sent.
 */
export const ClinicalItemSchema = z.object({
  /**
   * Stable identity within the patient's record, chosen by the feed so that a later message about
   * the same fact replaces it: e.g. `fhir:Condition/123`, `hl7:problem:<PRB-4>`, `hl7:dg1:<code>`.
   */
  key: z.string().min(1),
  kind: z.enum(ITEM_KINDS),
  codings: z.array(CodingSchema),
  /** Clinical status: active, resolved, inactive, remission, entered-in-error, completed, stopped… */
  status: z.string().optional(),
  /** On the problem list (PRB, FHIR category `problem-list-item`), not only an encounter diagnosis. */
  problemList: z.boolean().optional(),
  /** Results: a number or a coded/text value (never free text), its unit and reference range. */
  value: z.union([z.number(), z.string()]).optional(),
  unit: z.string().optional(),
  referenceRange: z.string().optional(),
  /** Interpretation as given (HL7 OBX-8 / FHIR interpretation code): H, L, A, HH, LL, N… */
  interpretation: z.string().optional(),
  /** When the fact happened or was recorded (ISO 8601 date or datetime). */
  effectiveAt: z.string().optional(),
  /** The FHIR reference it came from (`Condition/123`), made opaque when sent. */
  fhirId: z.string().optional(),
  source: z.enum(['hl7v2', 'fhir', 'json']),
  /** The record_version at which this item last changed. */
  version: z.int().min(0),
});
export type ClinicalItem = z.infer<typeof ClinicalItemSchema>;

/**
 * What identifies the patient. Kept (encrypted) only to assemble age, gender and race, and so that
 * the last check before sending can refuse a payload that still contains any of it; never sent.
 */
export const PatientIdentityFacetsSchema = z.object({
  birthDate: z.string().optional(),
  gender: z.string().optional(),
  race: z.array(z.string()).default([]),
  names: z.array(z.string()).default([]),
  /** MRNs and other identifiers (account, SSN, device, FHIR logical id). */
  identifiers: z.array(z.string()).default([]),
  phones: z.array(z.string()).default([]),
  addresses: z.array(z.string()).default([]),
  emails: z.array(z.string()).default([]),
});
export type PatientIdentityFacets = z.infer<typeof PatientIdentityFacetsSchema>;

/** The normalized clinical record of one patient, updated by every feed. */
export const ClinicalRecordSchema = z.object({
  items: z.record(z.string(), ClinicalItemSchema).default({}),
  patient: PatientIdentityFacetsSchema.default({
    race: [],
    names: [],
    identifiers: [],
    phones: [],
    addresses: [],
    emails: [],
  }),
});
export type ClinicalRecord = z.infer<typeof ClinicalRecordSchema>;

export function emptyClinicalRecord(): ClinicalRecord {
  return ClinicalRecordSchema.parse({});
}
