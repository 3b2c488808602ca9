import { loadCcsrTables } from '../ccsr/ccsr-tables.ts';
import { isCcsrSystem, isIcd10CmSystem } from '../ccsr/code-systems.ts';
import { icd10Description } from '../ccsr/icd10-descriptions.ts';

/**
 * The name a coding may carry to the service: the official description from the shipped tables,
 * never the sender's text.
 * - ICD-10-CM (`http://hl7.org/fhir/sid/icd-10-cm` or its OID): the `icd10cm_description` of
 *   the CCSR v2023.1 table (`E11.9` -> `Type 2 diabetes mellitus without complications`);
 * - CCSR (`ccsr`, AHRQ's DXCCSR page): the category description (`END002` -> `Diabetes mellitus
 *   without complication`);
 * - anything else (LOINC, SNOMED CT, RxNorm, CVX, local codes; a code the table does not hold):
 *   undefined, and the display is not sent. No LOINC or SNOMED table ships with the project.
 */
export function canonicalDisplay(system: string, code: string): string | undefined {
  if (isIcd10CmSystem(system)) return icd10Description(code);
  if (isCcsrSystem(system))
    return loadCcsrTables().category(code.trim().toUpperCase())?.description;
  return undefined;
}
