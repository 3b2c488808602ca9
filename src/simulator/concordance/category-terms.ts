import type { CcsrCategory } from '../../ccsr/ccsr-tables.ts';

/** Words too general to tie a record's node to one category. */
const GENERIC = new Set([
  'other',
  'unspecified',
  'specified',
  'disorders',
  'disorder',
  'diseases',
  'disease',
  'conditions',
  'condition',
  'without',
  'complications',
  'complication',
  'secondary',
  'primary',
  'related',
  'certain',
  'including',
  'except',
  'sequela',
  'initial',
  'subsequent',
  'encounter',
]);

/** Distinctive lower-case words of a category's description (five letters or more). */
export function categoryTerms(category: CcsrCategory): string[] {
  const words = category.description.toLowerCase().match(/[a-z]{5,}/g) ?? [];
  return [...new Set(words.filter((w) => !GENERIC.has(w)))];
}
