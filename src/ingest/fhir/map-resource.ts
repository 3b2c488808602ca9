import type { z } from 'zod';
import { toValidationItems } from '../../interface/validation-error.ts';
import type { ClinicalChange, ReportedItem } from '../../records/clinical-change.ts';
import type { ItemKind, PatientIdentityFacets } from '../../records/clinical-record.ts';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import {
  AllergySchema,
  CarePlanSchema,
  ConditionSchema,
  ImmunizationSchema,
  MedicationSchema,
  ObservationSchema,
  PatientSchema,
  ProcedureSchema,
  type CodeableConcept,
  type FhirPatient,
  type FhirResource,
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
      let value: number | string | undefined;
      let unit: string | undefined;
      if (r.valueQuantity?.value !== undefined) {
        value = r.valueQuantity.value;
        unit = r.valueQuantity.unit ?? r.valueQuantity.code;
      } else if (r.valueCodeableConcept !== undefined) {
        value = firstCode(r.valueCodeableConcept);
      } else if (r.valueInteger !== undefined) {
        value = r.valueInteger;
      } else if (r.valueBoolean !== undefined) {
        value = String(r.valueBoolean);
      }
      const range = r.referenceRange?.[0];
      return upsert(subject, 'observation', {
        codings: codingsOf(r.code),
        status: r.status,
        value,
        unit,
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
