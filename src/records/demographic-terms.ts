/**
 * Values of `demographics.gender` / `demographics.race` from a fixed vocabulary: they cannot carry
 * an identifier, and are not matched, so that Ms White whose race is "White" is not refused; nor
 * are they free text, so they are sent whatever their length (see strip-free-text.ts).
 */
export const DEMOGRAPHIC_TERMS: ReadonlySet<string> = new Set([
  'male',
  'female',
  'other',
  'unknown',
  'white',
  'black',
  'black or african american',
  'asian',
  'american indian or alaska native',
  'native hawaiian or other pacific islander',
  'hispanic or latino',
  'asked but unknown',
  'declined',
  '1002-5',
  '2028-9',
  '2054-5',
  '2076-8',
  '2106-3',
  '2131-1',
]);
