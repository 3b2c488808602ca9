import type { PatientIdentityFacets } from './clinical-record.ts';

const NAME_SEPARATORS = /[\^\s,]+/;
const ADDRESS_SEPARATORS = /[\^,;\n\r]+/;

/** `YYYY-MM-DD` or `YYYYMMDD` (time part ignored) into its four usual written forms. */
function birthDateForms(birthDate: string | undefined): string[] {
  const match = /^(\d{4})-?(\d{2})-?(\d{2})/.exec(birthDate?.trim() ?? '');
  if (!match) return [];
  const [, y, m, d] = match;
  return [`${y}-${m}-${d}`, `${y}${m}${d}`, `${m}/${d}/${y}`, `${d}/${m}/${y}`];
}

/**
 * The strings the last check before sending must not find in a payload (see
 * `prepareForService`'s `knownIdentifiers`): the local id; each identifier (and, when it is a
 * punctuated number of 7+ digits such as an SSN, its digits); each name and each
 * name part of 3+ characters (split on `^`, spaces, commas); the birth date as YYYY-MM-DD,
 * YYYYMMDD, MM/DD/YYYY and DD/MM/YYYY when the full date is known; each phone as given and as its
 * digits (when 7+); each email; each address part of 5+ characters (split on `^`, commas,
 * semicolons, line breaks). Trimmed, lower-cased, deduplicated, empties dropped.
 */
export function knownIdentifiers(localId: string, facets: PatientIdentityFacets): string[] {
  const found: string[] = [localId, ...facets.emails];
  for (const identifier of facets.identifiers) {
    found.push(identifier);
    // A punctuated number (SSN 123-45-6789) is also looked for as its digits, as phones are.
    const digits = identifier.replace(/[\s\-./]/g, '');
    if (digits !== identifier.trim() && /^\d{7,}$/.test(digits)) found.push(digits);
  }
  for (const name of facets.names) {
    found.push(name, ...name.split(NAME_SEPARATORS).filter((part) => part.trim().length >= 3));
  }
  found.push(...birthDateForms(facets.birthDate));
  for (const phone of facets.phones) {
    found.push(phone);
    const digits = phone.replace(/\D/g, '');
    if (digits.length >= 7) found.push(digits);
  }
  for (const address of facets.addresses) {
    found.push(...address.split(ADDRESS_SEPARATORS).filter((part) => part.trim().length >= 5));
  }
  const unique = new Set(found.map((value) => value.trim().toLowerCase()));
  unique.delete('');
  return [...unique];
}
