/**
 * GitHub's anchor of a Markdown heading: lower case, spaces to hyphens, punctuation dropped
 * (letters, digits, `_` and `-` stay).
 */
export function markdownAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}
