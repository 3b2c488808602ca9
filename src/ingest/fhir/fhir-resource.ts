import { z } from 'zod';

/**
 * The parts of FHIR R4 datatypes the ingester relies on. Every object is loose: unknown fields
 * pass (and are then ignored), but a field we read must have the type FHIR gives it.
 */
export const CodingSchema = z.looseObject({
  system: z.string().optional(),
  code: z.string().optional(),
  display: z.string().optional(),
});

export const CodeableConceptSchema = z.looseObject({
  coding: z.array(CodingSchema).optional(),
});
export type CodeableConcept = z.infer<typeof CodeableConceptSchema>;

export const ReferenceSchema = z.looseObject({ reference: z.string().optional() });

const QuantitySchema = z.looseObject({
  value: z.number().optional(),
  unit: z.string().optional(),
  system: z.string().optional(),
  code: z.string().optional(),
});
export type FhirQuantity = z.infer<typeof QuantitySchema>;

const PeriodSchema = z.looseObject({ start: z.string().optional() });

/** The media types FHIR JSON comes with (FHIR's own, and plain JSON). */
export const FHIR_JSON_TYPES: readonly string[] = ['application/fhir+json', 'application/json'];

/** Any resource: a type and (usually) an id. */
export const ResourceSchema = z.looseObject({
  resourceType: z.string().regex(/^[A-Z][A-Za-z]+$/, 'a FHIR resource type'),
  id: z
    .string()
    .regex(/^[A-Za-z0-9\-.]{1,64}$/, 'a FHIR logical id')
    .optional(),
});
export type FhirResource = z.infer<typeof ResourceSchema>;

const concepts = z.array(CodeableConceptSchema).optional();

export const ConditionSchema = z.looseObject({
  clinicalStatus: CodeableConceptSchema.optional(),
  verificationStatus: CodeableConceptSchema.optional(),
  category: concepts,
  code: CodeableConceptSchema.optional(),
  subject: ReferenceSchema.optional(),
  onsetDateTime: z.string().optional(),
  recordedDate: z.string().optional(),
});

/** The value[x] choices of an observation (or a component) that can hold no free text. */
const observationValue = {
  valueQuantity: QuantitySchema.optional(),
  valueCodeableConcept: CodeableConceptSchema.optional(),
  valueInteger: z.number().optional(),
  valueBoolean: z.boolean().optional(),
};
export type FhirObservationValue = {
  [K in keyof typeof observationValue]?: z.infer<(typeof observationValue)[K]>;
};

export const ObservationSchema = z.looseObject({
  status: z.string().optional(),
  category: concepts,
  code: CodeableConceptSchema.optional(),
  component: z
    .array(z.looseObject({ code: CodeableConceptSchema.optional(), ...observationValue }))
    .optional(),
  subject: ReferenceSchema.optional(),
  effectiveDateTime: z.string().optional(),
  effectiveInstant: z.string().optional(),
  effectivePeriod: PeriodSchema.optional(),
  issued: z.string().optional(),
  ...observationValue,
  interpretation: concepts,
  referenceRange: z
    .array(
      z.looseObject({
        low: QuantitySchema.optional(),
        high: QuantitySchema.optional(),
        text: z.string().optional(),
      }),
    )
    .optional(),
});

export const MedicationSchema = z.looseObject({
  status: z.string().optional(),
  medicationCodeableConcept: CodeableConceptSchema.optional(),
  subject: ReferenceSchema.optional(),
  authoredOn: z.string().optional(),
  effectiveDateTime: z.string().optional(),
  effectivePeriod: PeriodSchema.optional(),
  dateAsserted: z.string().optional(),
});

export const ProcedureSchema = z.looseObject({
  status: z.string().optional(),
  code: CodeableConceptSchema.optional(),
  subject: ReferenceSchema.optional(),
  performedDateTime: z.string().optional(),
  performedPeriod: PeriodSchema.optional(),
});

export const CarePlanSchema = z.looseObject({
  status: z.string().optional(),
  category: concepts,
  subject: ReferenceSchema.optional(),
  period: PeriodSchema.optional(),
  created: z.string().optional(),
});

export const AllergySchema = z.looseObject({
  clinicalStatus: CodeableConceptSchema.optional(),
  verificationStatus: CodeableConceptSchema.optional(),
  code: CodeableConceptSchema.optional(),
  patient: ReferenceSchema.optional(),
  onsetDateTime: z.string().optional(),
  recordedDate: z.string().optional(),
});

export const ImmunizationSchema = z.looseObject({
  status: z.string().optional(),
  vaccineCode: CodeableConceptSchema.optional(),
  patient: ReferenceSchema.optional(),
  occurrenceDateTime: z.string().optional(),
  recorded: z.string().optional(),
});

export const FamilyMemberHistorySchema = z.looseObject({
  status: z.string().optional(),
  patient: ReferenceSchema.optional(),
  date: z.string().optional(),
  relationship: CodeableConceptSchema.optional(),
  condition: z.array(z.looseObject({ code: CodeableConceptSchema.optional() })).optional(),
});

/** One answer of a questionnaire item: only the value[x] choices that carry no free text are read. */
const AnswerSchema = z.looseObject({
  valueCoding: CodingSchema.optional(),
  valueInteger: z.number().optional(),
  valueDecimal: z.number().optional(),
  valueBoolean: z.boolean().optional(),
  valueQuantity: QuantitySchema.optional(),
  get item() {
    return z.array(QuestionnaireItemSchema).optional();
  },
});

/** A questionnaire item: its `text` (the question as written) is never read. */
export const QuestionnaireItemSchema = z.looseObject({
  linkId: z.string().optional(),
  definition: z.string().optional(),
  answer: z.array(AnswerSchema).optional(),
  get item() {
    return z.array(QuestionnaireItemSchema).optional();
  },
});
export type QuestionnaireItem = z.infer<typeof QuestionnaireItemSchema>;

export const QuestionnaireResponseSchema = z.looseObject({
  status: z.string().optional(),
  subject: ReferenceSchema.optional(),
  authored: z.string().optional(),
  item: z.array(QuestionnaireItemSchema).optional(),
});

export const PatientSchema = z.looseObject({
  identifier: z
    .array(z.looseObject({ system: z.string().optional(), value: z.string().optional() }))
    .optional(),
  name: z
    .array(
      z.looseObject({
        text: z.string().optional(),
        given: z.array(z.string()).optional(),
        family: z.string().optional(),
      }),
    )
    .optional(),
  telecom: z
    .array(z.looseObject({ system: z.string().optional(), value: z.string().optional() }))
    .optional(),
  gender: z.string().optional(),
  birthDate: z.string().optional(),
  address: z
    .array(
      z.looseObject({
        text: z.string().optional(),
        line: z.array(z.string()).optional(),
        city: z.string().optional(),
        district: z.string().optional(),
        state: z.string().optional(),
        postalCode: z.string().optional(),
        country: z.string().optional(),
      }),
    )
    .optional(),
  extension: z
    .array(
      z.looseObject({
        url: z.string().optional(),
        extension: z
          .array(
            z.looseObject({
              url: z.string().optional(),
              valueCoding: CodingSchema.optional(),
            }),
          )
          .optional(),
      }),
    )
    .optional(),
});
export type FhirPatient = z.infer<typeof PatientSchema>;

/** `Type/id` of a reference, whatever its form: relative, absolute, versioned. */
export function parseReference(reference: string): { type: string; id: string } | undefined {
  const match = /(?:^|\/)([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/.exec(
    reference,
  );
  if (match === null) return undefined;
  return { type: match[1] as string, id: match[2] as string };
}
