/** A plain text table: a header row, a rule, and left-aligned columns cut to `maxWidth`. */
export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  maxWidth = 48,
): string {
  const cut = (cell: string) => (cell.length > maxWidth ? `${cell.slice(0, maxWidth - 1)}…` : cell);
  const cells = [headers, ...rows].map((row) => row.map(cut));
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const [head = [], ...body] = cells;
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}
