/**
 * The code systems the shipped CCSR tables are keyed by, as a coding's `system` names them. Shared
 * by the worker (canonical display names) and the local service (matching a record to a category).
 */

/** ICD-10-CM: the FHIR URI (what every feed of this project writes) and the HL7 OID form. */
export const ICD10CM_SYSTEMS: readonly string[] = [
  'http://hl7.org/fhir/sid/icd-10-cm',
  'urn:oid:2.16.840.1.113883.6.90',
];

/**
 * CCSR categories have no official system URI: these spellings name them (compared
 * case-insensitively), the short `ccsr` and the address of AHRQ's DXCCSR page.
 */
export const CCSR_SYSTEMS: readonly string[] = [
  'ccsr',
  'https://hcup-us.ahrq.gov/toolssoftware/ccsr/dxccsr.jsp',
];

/** LOINC: no table of its names ships with the project, so its displays are never sent. */
export const LOINC_SYSTEMS: readonly string[] = [
  'http://loinc.org',
  'urn:oid:2.16.840.1.113883.6.1',
];

const normalized = (system: string) => system.trim().toLowerCase().replace(/\/+$/, '');
const ICD10CM = new Set(ICD10CM_SYSTEMS.map(normalized));
const CCSR = new Set(CCSR_SYSTEMS.map(normalized));

/** True when `system` names ICD-10-CM (trailing slashes and case ignored). */
export function isIcd10CmSystem(system: string): boolean {
  return ICD10CM.has(normalized(system));
}

/** True when `system` names CCSR categories (trailing slashes and case ignored). */
export function isCcsrSystem(system: string): boolean {
  return CCSR.has(normalized(system));
}
