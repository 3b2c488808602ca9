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
  /** A relative's conditions (FHIR FamilyMemberHistory): never a node of the assembled record. */
  'family_history',
  /** Coded answers of a questionnaire (FHIR QuestionnaireResponse): never a node either. */
  'questionnaire',
] as const;
export type ItemKind = (typeof ITEM_KINDS)[number];

const CodingSchema = z.object({
  system: z.string().min(1),
  code: z.string().min(1),
  display: z.string().optional(),
});

/** A coded value: a system and a code, never a display (free text). */
const CodeSchema = z.object({ system: z.string().min(1), code: z.string().min(1) });

/**
 * A part of an item with a code of its own: a component of an observation (the systolic and
 * diastolic values of a blood pressure panel), or one coded answer of a questionnaire (`codings`
 * the question's code, LOINC). Values as in an item: a number, a boolean (`true`/`false`) or a
 * code; never free text.
 */
const ComponentSchema = z.object({
  codings: z.array(CodingSchema),
  value: z.union([z.number(), z.string()]).optional(),
  unit: z.string().optional(),
  /** The UCUM code of the unit, when the feed gave one. */
  unitCode: z.string().optional(),
  valueCoding: CodeSchema.optional(),
});
export type ClinicalComponent = z.infer<typeof ComponentSchema>;

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
  /** The UCUM code of `unit`, when the feed gave one (FHIR `valueQuantity.code`). */
  unitCode: z.string().optional(),
  /** A coded value with its system (`value` holds its code alone). */
  valueCoding: CodeSchema.optional(),
  /** FHIR Observation category codes: `social-history`, `vital-signs`, `laboratory`, `survey`… */
  categories: z.array(z.string()).optional(),
  /** Observation components, or a questionnaire's coded answers (see ComponentSchema). */
  components: z.array(ComponentSchema).optional(),
  /** Family history: who the relative is (FHIR v3 RoleCode, e.g. `FTH`). */
  relationship: CodeSchema.optional(),
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
