import { CODE_SYSTEMS } from '../records/clinical-record.ts';

/** The code systems of problems the terminology step tells apart (the metric's `system` label). */
export type ProblemSystem = 'icd10cm' | 'icd9cm' | 'snomed' | 'other';

/**
 * Every usual name of a problem code system (compared trimmed, lower-case, trailing slashes
 * removed): FHIR URIs, HL7 OIDs, and the HL7 v2 table 0396 names of CWE/CE component 3.
 */
const NAMES: Record<Exclude<ProblemSystem, 'other'>, readonly string[]> = {
  icd10cm: [
    CODE_SYSTEMS.icd10cm,
    'urn:oid:2.16.840.1.113883.6.90',
    '2.16.840.1.113883.6.90',
    'i10',
    'i10c',
    'icd10cm',
    'icd-10-cm',
  ],
  icd9cm: [
    CODE_SYSTEMS.icd9cm,
    'urn:oid:2.16.840.1.113883.6.103',
    '2.16.840.1.113883.6.103',
    'i9',
    'i9c',
    'icd9cm',
    'icd-9-cm',
  ],
  snomed: [
    CODE_SYSTEMS.snomed,
    'urn:oid:2.16.840.1.113883.6.96',
    '2.16.840.1.113883.6.96',
    'sct',
    'snm',
    'snomed',
    'snomed-ct',
    'snomedct',
  ],
};

const normalized = (system: string) => system.trim().toLowerCase().replace(/\/+$/, '');

const BY_NAME = new Map<string, ProblemSystem>(
  Object.entries(NAMES).flatMap(([system, names]) =>
    names.map((name) => [normalized(name), system as ProblemSystem]),
  ),
);

/** Which problem code system `system` names; `other` for local and unknown systems. */
export function problemSystemOf(system: string): ProblemSystem {
  return BY_NAME.get(normalized(system)) ?? 'other';
}

/** The FHIR URI of a known system; any other system trimmed and lower-cased (local codes). */
export function canonicalSystem(system: string): string {
  const known = problemSystemOf(system);
  return known === 'other' ? normalized(system) : CODE_SYSTEMS[known];
}

/** ICD-10-CM as the worker writes it: upper case, the dot after the third character. */
export function formatIcd10Cm(code: string): string | undefined {
  const bare = code.trim().toUpperCase().replace('.', '');
  if (!/^[A-Z][0-9][0-9A-Z][0-9A-Z]{0,4}$/.test(bare)) return undefined;
  return bare.length > 3 ? `${bare.slice(0, 3)}.${bare.slice(3)}` : bare;
}
