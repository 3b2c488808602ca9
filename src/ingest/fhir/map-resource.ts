import type { z } from 'zod';
import { toValidationItems } from '../../interface/validation-error.ts';
import type { ClinicalChange, ReportedItem } from '../../records/clinical-change.ts';
import {
  CODE_SYSTEMS,
  type ClinicalComponent,
  type ItemKind,
  type PatientIdentityFacets,
} from '../../records/clinical-record.ts';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import {
  AllergySchema,
  CarePlanSchema,
  ConditionSchema,
  FamilyMemberHistorySchema,
  ImmunizationSchema,
  MedicationSchema,
  ObservationSchema,
  PatientSchema,
  ProcedureSchema,
  QuestionnaireResponseSchema,
  type CodeableConcept,
  type FhirObservationValue,
  type FhirPatient,
  type FhirResource,
  type QuestionnaireItem,
} from './fhir-resource.ts';

/** Resource types that become clinical items (and Patient, which becomes identity facets). */
export const MAPPED_TYPES: ReadonlySet<string> = new Set([
  'Patient',
  'Condition',
  'Observation',
  'MedicationRequest',
  'MedicationStatement',
  'Procedure',
  'CarePlan',
  'AllergyIntolerance',
  'Immunization',
  'FamilyMemberHistory',
  'QuestionnaireResponse',
]);

/** What one clinical resource says: the change and the patient it is about. */
export interface MappedResource {
  /** The resource's subject/patient reference as written, if any. */
  subject: string | undefined;
  /** `Condition`, `Observation`… (for config rules). */
  kind: string;
  change: ClinicalChange;
}

const US_CORE_RACE = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-race';

/** Parses with `schema`, or throws a 422 whose locations start at `loc` (never values). */
function parse<S extends z.ZodType>(
  schema: S,
  resource: unknown,
  loc: readonly (string | number)[],
): z.infer<S> {
  const result = schema.safeParse(resource);
  if (!result.success)
    throw new RequestValidationError(toValidationItems(result.error.issues, loc));
  return result.data;
}

function codingsOf(...concepts: (CodeableConcept | undefined)[]): ReportedItem['codings'] {
  const out: ReportedItem['codings'] = [];
  for (const concept of concepts) {
    for (const coding of concept?.coding ?? []) {
      if (!coding.system || !coding.code) continue;
      out.push({
        system: coding.system,
        code: coding.code,
        ...(coding.display ? { display: coding.display } : {}),
      });
    }
  }
  return out;
}

function firstCode(concept: CodeableConcept | undefined): string | undefined {
  return concept?.coding?.find((c) => c.code)?.code;
}

function hasCode(concepts: CodeableConcept[] | undefined, code: string): boolean {
  return (concepts ?? []).some((concept) => concept.coding?.some((c) => c.code === code));
}

/** Drops undefined fields, which zod's optional fields (and exactOptionalPropertyTypes) dislike. */
function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function rangeText(
  range:
    { low?: { value?: number | undefined }; high?: { value?: number | undefined } } | undefined,
  text: string | undefined,
): string | undefined {
  if (text) return text;
  const low = range?.low?.value;
  const high = range?.high?.value;
  if (low !== undefined && high !== undefined) return `${low}-${high}`;
  if (low !== undefined) return `>=${low}`;
  if (high !== undefined) return `<=${high}`;
  return undefined;
}

const UCUM = 'http://unitsofmeasure.org';

/** The first coding with both a system and a code, without its display. */
function firstCoding(
  concept: { coding?: { system?: string; code?: string }[] } | undefined,
): { system: string; code: string } | undefined {
  const coding = concept?.coding?.find((c) => c.system && c.code);
  return coding?.system && coding.code ? { system: coding.system, code: coding.code } : undefined;
}

/**
 * A value that carries no free text (a quantity, a code, an integer, a boolean); `valueString`
 * and the other text choices are never read.
 */
function valueOf(r: FhirObservationValue): Omit<ClinicalComponent, 'codings'> {
  if (r.valueQuantity?.value !== undefined) {
    const q = r.valueQuantity;
    return defined({
      value: q.value,
      unit: q.unit ?? q.code,
      unitCode: q.system === UCUM ? q.code : undefined,
    });
  }
  if (r.valueCodeableConcept !== undefined) {
    return defined({
      value: firstCode(r.valueCodeableConcept),
      valueCoding: firstCoding(r.valueCodeableConcept),
    });
  }
  if (r.valueInteger !== undefined) return { value: r.valueInteger };
  if (r.valueBoolean !== undefined) return { value: String(r.valueBoolean) };
  return {};
}

/** Questionnaire items read at most this deep, and answers kept per response at most. */
const MAX_ITEM_DEPTH = 12;
const MAX_ANSWERS = 500;

/** A LOINC code (`72166-2`): digits, a dash, a check digit. */
const LOINC_CODE = /^\d{1,7}-\d$/;

/**
 * The LOINC code of a question: the end of a LOINC `definition` URL
 * (`http://loinc.org/fhir/DataElement/54125-0`), or a `linkId` that is a LOINC code (or ends in
 * one, as the `/72166-2` paths of LOINC forms do). Undefined for a form's own link ids.
 */
function questionCode(item: QuestionnaireItem): string | undefined {
  const definition = item.definition?.trim();
  if (definition !== undefined && /^https?:\/\/loinc\.org\//i.test(definition)) {
    const code = definition.split('/').pop() ?? '';
    if (LOINC_CODE.test(code)) return code;
  }
  const link = item.linkId?.trim().split('/').pop() ?? '';
  return LOINC_CODE.test(link) ? link : undefined;
}

/**
 * The coded answers of a questionnaire, flattened: one component per answer of a LOINC-coded
 * question whose value is a code, a number, a quantity or a boolean. Free-text answers
 * (`valueString`, names, addresses), dates and questions without a LOINC code are never kept.
 */
function answersOf(items: readonly QuestionnaireItem[] | undefined): ClinicalComponent[] {
  const out: ClinicalComponent[] = [];
  const walk = (list: readonly QuestionnaireItem[] | undefined, depth: number) => {
    if (list === undefined || depth > MAX_ITEM_DEPTH) return;
    for (const item of list) {
      const code = questionCode(item);
      for (const answer of item.answer ?? []) {
        const value =
          answer.valueCoding !== undefined
            ? defined({
                value: answer.valueCoding.code,
                valueCoding: firstCoding({ coding: [answer.valueCoding] }),
              })
            : valueOf({
                valueQuantity: answer.valueQuantity,
                valueInteger: answer.valueInteger ?? answer.valueDecimal,
                valueBoolean: answer.valueBoolean,
              });
        if (code !== undefined && value.value !== undefined && out.length < MAX_ANSWERS) {
          out.push({ codings: [{ system: CODE_SYSTEMS.loinc, code }], ...value });
        }
        walk(answer.item, depth + 1);
      }
      walk(item.item, depth + 1);
    }
  };
  walk(items, 0);
  return out;
}

/**
 * The change a clinical resource makes (key `fhir:<Type>/<id>`), or undefined for a type we do
 * not map. Narrative (`text`), notes and free-text values are never read.
 */
export function mapClinicalResource(
  resource: FhirResource & { id: string },
  loc: readonly (string | number)[],
): MappedResource | undefined {
  const fhirId = `${resource.resourceType}/${resource.id}`;
  const key = `fhir:${fhirId}`;
  const remove = (subject: string | undefined): MappedResource => ({
    subject,
    kind: resource.resourceType,
    change: { type: 'remove', key },
  });
  const upsert = (
    subject: string | undefined,
    kind: ItemKind,
    item: Omit<ReportedItem, 'key' | 'kind' | 'fhirId' | 'source'>,
  ): MappedResource => ({
    subject,
    kind: resource.resourceType,
    change: {
      type: 'upsert',
      item: defined({ key, kind, fhirId, source: 'fhir' as const, ...item }),
    },
  });

  switch (resource.resourceType) {
    case 'Condition': {
      const r = parse(ConditionSchema, resource, loc);
      const subject = r.subject?.reference;
      if (firstCode(r.verificationStatus) === 'entered-in-error') return remove(subject);
      const problemList = hasCode(r.category, 'problem-list-item')
        ? true
        : hasCode(r.category, 'encounter-diagnosis')
          ? false
          : undefined;
      return upsert(subject, 'condition', {
        codings: codingsOf(r.code),
        status: firstCode(r.clinicalStatus),
        problemList,
        effectiveAt: r.onsetDateTime ?? r.recordedDate,
      });
    }
    case 'Observation': {
      const r = parse(ObservationSchema, resource, loc);
      const subject = r.subject?.reference;
      if (r.status === 'entered-in-error') return remove(subject);
      const range = r.referenceRange?.[0];
      const categories = (r.category ?? []).flatMap((c) =>
        (c.coding ?? []).flatMap((coding) => (coding.code ? [coding.code] : [])),
      );
      const components = (r.component ?? [])
        .map((c) => ({ codings: codingsOf(c.code), ...valueOf(c) }))
        .filter((c) => c.codings.length > 0 && c.value !== undefined);
      return upsert(subject, 'observation', {
        codings: codingsOf(r.code),
        status: r.status,
        ...valueOf(r),
        categories: categories.length > 0 ? categories : undefined,
        components: components.length > 0 ? components : undefined,
        interpretation: firstCode(r.interpretation?.[0]),
        referenceRange: rangeText(range, range?.text),
        effectiveAt:
          r.effectiveDateTime ?? r.effectiveInstant ?? r.effectivePeriod?.start ?? r.issued,
      });
    }
    case 'MedicationRequest':
    case 'MedicationStatement': {
      const r = parse(MedicationSchema, resource, loc);
      const subject = r.subject?.reference;
      if (r.status === 'entered-in-error') return remove(subject);
      return upsert(subject, 'medication', {
        codings: codingsOf(r.medicationCodeableConcept),
        status: r.status,
        effectiveAt:
          r.authoredOn ?? r.effectiveDateTime ?? r.effectivePeriod?.start ?? r.dateAsserted,
      });
    }
    case 'Procedure': {
      const r = parse(ProcedureSchema, resource, loc);
      const subject = r.subject?.reference;
      if (r.status === 'entered-in-error') return remove(subject);
      return upsert(subject, 'procedure', {
        codings: codingsOf(r.code),
        status: r.status,
        effectiveAt: r.performedDateTime ?? r.performedPeriod?.start,
      });
    }
    case 'CarePlan': {
      const r = parse(CarePlanSchema, resource, loc);
      const subject = r.subject?.reference;
      if (r.status === 'entered-in-error') return remove(subject);
      return upsert(subject, 'care_plan', {
        codings: codingsOf(...(r.category ?? [])),
        status: r.status,
        effectiveAt: r.period?.start ?? r.created,
      });
    }
    case 'AllergyIntolerance': {
      const r = parse(AllergySchema, resource, loc);
      const subject = r.patient?.reference;
      if (firstCode(r.verificationStatus) === 'entered-in-error') return remove(subject);
      return upsert(subject, 'allergy', {
        codings: codingsOf(r.code),
        status: firstCode(r.clinicalStatus),
        effectiveAt: r.onsetDateTime ?? r.recordedDate,
      });
    }
    case 'Immunization': {
      const r = parse(ImmunizationSchema, resource, loc);
      const subject = r.patient?.reference;
      if (r.status === 'entered-in-error') return remove(subject);
      return upsert(subject, 'immunization', {
        codings: codingsOf(r.vaccineCode),
        status: r.status,
        effectiveAt: r.occurrenceDateTime ?? r.recorded,
      });
    }
    case 'FamilyMemberHistory': {
      const r = parse(FamilyMemberHistorySchema, resource, loc);
      const subject = r.patient?.reference;
      if (r.status === 'entered-in-error') return remove(subject);
      // The relative's conditions; their notes, names and onset ages are never read.
      return upsert(subject, 'family_history', {
        codings: codingsOf(...(r.condition ?? []).map((c) => c.code)),
        relationship: firstCoding(r.relationship),
        status: r.status,
        effectiveAt: r.date,
      });
    }
    case 'QuestionnaireResponse': {
      const r = parse(QuestionnaireResponseSchema, resource, loc);
      const subject = r.subject?.reference;
      if (r.status === 'entered-in-error') return remove(subject);
      const components = answersOf(r.item);
      return upsert(subject, 'questionnaire', {
        codings: [],
        components: components.length > 0 ? components : undefined,
        status: r.status,
        effectiveAt: r.authored,
      });
    }
    default:
      return undefined;
  }
}

export function parsePatient(resource: unknown, loc: readonly (string | number)[]): FhirPatient {
  return parse(PatientSchema, resource, loc);
}

function unique(values: (string | undefined)[]): string[] {
  return [...new Set(values.filter((v): v is string => v !== undefined && v.trim() !== ''))];
}

/** The identity facets of a Patient: names, birth date, gender, race, identifiers, contacts. */
export function patientFacets(
  patient: FhirPatient,
  logicalId: string | undefined,
): Partial<PatientIdentityFacets> {
  const names = unique(
    (patient.name ?? []).flatMap((name) => [
      name.text,
      [...(name.given ?? []), name.family].filter(Boolean).join(' '),
    ]),
  );
  const race = unique(
    (patient.extension ?? [])
      .filter((ext) => ext.url === US_CORE_RACE)
      .flatMap((ext) => ext.extension ?? [])
      .filter((part) => part.url === 'ombCategory')
      .map((part) => part.valueCoding?.display ?? part.valueCoding?.code),
  );
  const telecom = patient.telecom ?? [];
  const addresses = unique(
    (patient.address ?? []).flatMap((a) => [
      a.text,
      [...(a.line ?? []), a.city, a.district, a.state, a.postalCode, a.country]
        .filter(Boolean)
        .join(', '),
    ]),
  );
  return defined({
    birthDate: patient.birthDate,
    gender: patient.gender,
    race,
    names,
    identifiers: unique([logicalId, ...(patient.identifier ?? []).map((i) => i.value)]),
    phones: unique(
      telecom.filter((t) => t.system === 'phone' || t.system === 'fax').map((t) => t.value),
    ),
    emails: unique(telecom.filter((t) => t.system === 'email').map((t) => t.value)),
    addresses,
  });
}
