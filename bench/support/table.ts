/** One line of the readable table: a scenario, a figure, its value and the setup behind it. */
export interface TableRow {
  scenario: string;
  figure: string;
  value: string;
  setup: string;
}

/** Renders rows as an aligned plain-text table. */
export function renderTable(rows: readonly TableRow[]): string {
  const headers: TableRow = {
    scenario: 'scenario',
    figure: 'figure',
    value: 'value',
    setup: 'setup',
  };
  const columns = ['scenario', 'figure', 'value', 'setup'] as const;
  const widths = columns.map((c) => Math.max(...[headers, ...rows].map((r) => r[c].length)));
  const line = (row: TableRow) =>
    columns
      .map((c, i) =>
        c === 'value' ? row[c].padStart(widths[i] ?? 0) : row[c].padEnd(widths[i] ?? 0),
      )
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(headers), rule, ...rows.map(line)].join('\n');
}

/** A number with thousands separators and a fixed number of decimals ("—" for null). */
export function fmt(value: number | null | undefined, digits = 0, unit = ''): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  const text = value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
  return unit === '' ? text : `${text} ${unit}`;
}
