/**
 * A canonical JSON text of `value` for comparing two results: object keys sorted, keys named in
 * `ignoreFields` dropped at any depth, arrays kept in order (their order can carry meaning, e.g.
 * a ranking of guidelines). Two values compare equal exactly when their texts are equal.
 */
export function normalizedContent(value: unknown, ignoreFields: Iterable<string>): string {
  const ignore = new Set(ignoreFields);
  return JSON.stringify(normalize(value, ignore)) ?? 'null';
}

function normalize(value: unknown, ignore: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((item) => normalize(item, ignore));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      if (ignore.has(key)) continue;
      const item = (value as Record<string, unknown>)[key];
      // JSON drops undefined members; doing so here keeps {a: undefined} equal to {}.
      if (item !== undefined) out[key] = normalize(item, ignore);
    }
    return out;
  }
  return value;
}
