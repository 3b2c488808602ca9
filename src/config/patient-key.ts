import { z } from 'zod';
import type { ConfigProblem } from './config-error.ts';

const listedOnce = (list: readonly string[]) => new Set(list).size === list.length;

/**
 * `identity.patient_key` (issue 20, "one person, one record"): the ids every feed sends for the
 * hospital's MRN, so that one person is one patient key whatever the feed. See
 * docs/clinical-feeds.md, "One key across feeds".
 */
export const PatientKeySchema = z.strictObject({
  hospital_mrn: z
    .strictObject({
      /**
       * HL7 v2 assigning authorities (CX.4 namespace id or universal id) of the MRN: their ids are
       * keyed by the id alone. Added to `hl7v2.patient_id.unqualified_authorities`.
       */
      hl7v2_authorities: z
        .array(
          z
            .string()
            .min(1)
            .regex(/^[^|]+$/, 'no "|"'),
        )
        .refine(listedOnce, 'an authority is listed twice')
        .default([]),
      /**
       * FHIR `Patient.identifier` systems of the MRN, tried in order: a Patient is keyed by the
       * value of its first identifier of one of them. After `fhir.patient_identifier_system`.
       */
      fhir_identifier_systems: z
        .array(z.string().min(1))
        .refine(listedOnce, 'a system is listed twice')
        .default([]),
    })
    .default({ hl7v2_authorities: [], fhir_identifier_systems: [] }),
});
export type PatientKeyConfig = z.infer<typeof PatientKeySchema>;

/** What the combination needs of the configuration (structural: no import of the schema). */
interface PatientKeySources {
  identity: { patient_key: PatientKeyConfig };
  fhir: { patient_identifier_system: string | null };
  hl7v2: {
    patient_id: {
      rules: readonly { any?: true; type_codes?: string[]; authorities?: string[] }[];
      unqualified_authorities: string[];
    };
  };
}

/**
 * The FHIR identifier systems whose value is a Patient's key, in the order they are tried:
 * `fhir.patient_identifier_system` first, then `identity.patient_key.hospital_mrn`'s. Empty: the
 * Patient's logical id is its key (as before).
 */
export function fhirPatientKeySystems(
  config: Pick<PatientKeySources, 'identity' | 'fhir'>,
): string[] {
  const old = config.fhir.patient_identifier_system;
  const added = config.identity.patient_key.hospital_mrn.fhir_identifier_systems;
  return [...new Set([...(old === null ? [] : [old]), ...added])];
}

/**
 * A Patient's key under {@link fhirPatientKeySystems}: the value of its first identifier of the
 * first system that has one; undefined when none has.
 */
export function patientKeyIdentifier(
  identifiers: readonly { system?: string | undefined; value?: string | undefined }[],
  systems: readonly string[],
): string | undefined {
  for (const system of systems) {
    const value = identifiers.find((i) => i.system === system && i.value)?.value;
    if (value !== undefined) return value;
  }
  return undefined;
}

/**
 * The configuration with `hl7v2.patient_id.unqualified_authorities` widened by the hospital MRN's
 * authorities: the HL7 v2 mapping (src/ingest/hl7v2/patient-id-rules.ts) then keys their ids by
 * the id alone, as it keys an unqualified authority's.
 */
export function withHospitalMrn<C extends PatientKeySources>(config: C): C {
  const added = config.identity.patient_key.hospital_mrn.hl7v2_authorities;
  const current = config.hl7v2.patient_id.unqualified_authorities;
  const missing = added.filter((a) => !current.includes(a));
  if (missing.length === 0) return config;
  return {
    ...config,
    hl7v2: {
      ...config.hl7v2,
      patient_id: { ...config.hl7v2.patient_id, unqualified_authorities: [...current, ...missing] },
    },
  };
}

const AT = 'identity.patient_key.hospital_mrn';

/**
 * Settings that contradict each other: an MRN authority that no `hl7v2.patient_id` rule accepts
 * (its ids would never be read, so the setting would silently do nothing), and
 * `fhir.patient_identifier_system` listed in `fhir_identifier_systems` after another system (it
 * is always tried first: two orders at once).
 */
export function patientKeyProblems(config: PatientKeySources): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const { hl7v2_authorities, fhir_identifier_systems } = config.identity.patient_key.hospital_mrn;
  const rules = config.hl7v2.patient_id.rules;
  hl7v2_authorities.forEach((authority, i) => {
    const accepted = rules.some(
      (r) => r.any === true || r.authorities === undefined || r.authorities.includes(authority),
    );
    if (!accepted) {
      problems.push({
        path: `${AT}.hl7v2_authorities.${i}`,
        message: `no hl7v2.patient_id rule accepts ids of authority "${authority}": add it to a rule's authorities, or remove it here`,
      });
    }
  });
  const old = config.fhir.patient_identifier_system;
  const at = old === null ? -1 : fhir_identifier_systems.indexOf(old);
  if (at > 0) {
    problems.push({
      path: `${AT}.fhir_identifier_systems.${at}`,
      message:
        'fhir.patient_identifier_system is always tried first: list it first here too, or leave it out of one of the two settings',
    });
  }
  return problems;
}
