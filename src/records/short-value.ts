/** Longer string values are taken for free text and left out (feeds should never send them). */
export const MAX_STRING_VALUE = 64;

/** More words than this in one value read as a sentence, not a code, unit or result. */
export const MAX_VALUE_WORDS = 4;

/** Something that reads as a calendar date: 2024-01-05, 20240105, 1/5/2024, 05.01.2024. */
export const DATE_LIKE = /\d{4}-\d{1,2}-\d{1,2}|(?:19|20)\d{6}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}/;

/**
 * `text` trimmed when it reads as a short coded value (a code, a unit, a range, a result such as
 * `Not detected` or `>60`): not empty, at most {@link MAX_STRING_VALUE} characters and
 * {@link MAX_VALUE_WORDS} words, no calendar date. Undefined for anything else, which is
 * treated as free text.
 */
export function shortValue(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed === '' || trimmed.length > MAX_STRING_VALUE) return undefined;
  if (trimmed.split(/\s+/).length > MAX_VALUE_WORDS) return undefined;
  return DATE_LIKE.test(trimmed) ? undefined : trimmed;
}
