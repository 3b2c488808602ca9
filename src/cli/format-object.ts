import { formatTable } from './format-table.ts';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isScalar = (value: unknown): value is string | number | boolean | null =>
  value === null || ['string', 'number', 'boolean'].includes(typeof value);

const isObjectList = (value: unknown): value is Record<string, unknown>[] =>
  Array.isArray(value) && value.length > 0 && value.every(isPlainObject);

/** A cell: a scalar as text, a list of scalars joined with `, `, anything else as compact JSON. */
export function cellText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (isScalar(value)) return String(value);
  if (Array.isArray(value) && value.every(isScalar)) return value.map(String).join(', ');
  return JSON.stringify(value);
}

/** The fields of `object`, nested objects spread into dotted names (`evidence.num_studies`). */
function flatten(object: Record<string, unknown>, prefix = ''): [string, unknown][] {
  return Object.entries(object).flatMap(([name, value]): [string, unknown][] => {
    const key = prefix === '' ? name : `${prefix}.${name}`;
    return isPlainObject(value) && Object.keys(value).length > 0
      ? flatten(value, key)
      : [[key, value]];
  });
}

/**
 * An answer whose shape the interface does not show (a concordance, Prevent recommendations) as
 * text: its fields in a `field  value` table (nested objects as dotted fields, lists of values
 * joined), then each list of objects as a table of its own under `name (count):`, an item a row.
 * Long cells are cut; `--json` prints everything.
 */
export function formatObject(object: Record<string, unknown>): string {
  const fields = flatten(object);
  const parts: string[] = [];
  const single = fields.filter(([, value]) => !isObjectList(value));
  if (single.length > 0) {
    parts.push(
      formatTable(
        ['field', 'value'],
        single.map(([name, value]) => [name, cellText(value)]),
        100,
      ),
    );
  }
  for (const [name, value] of fields) {
    if (!isObjectList(value)) continue;
    const items = value.map((item) => new Map(flatten(item)));
    const columns = [...new Set(items.flatMap((item) => [...item.keys()]))];
    const rows = items.map((item) => columns.map((column) => cellText(item.get(column))));
    parts.push(`${name} (${value.length}):\n${formatTable(columns, rows)}`);
  }
  return parts.join('\n\n');
}
