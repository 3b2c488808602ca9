/** A path into a JSON value: object keys and array indexes. */
export type JsonPath = (string | number)[];

/**
 * The path of the first place where `value` nests deeper than `maxDepth` objects or arrays (the
 * value itself being level 1), or undefined when it does not. Iterative, with an explicit stack:
 * a value nested 100,000 deep costs memory in proportion, never the call stack; the walk stops at
 * the first place found, and the path it returns is at most `maxDepth + 1` long.
 */
export function pathDeeperThan(value: unknown, maxDepth: number): JsonPath | undefined {
  const stack: { value: unknown; path: JsonPath }[] = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: at, path } = stack.pop() as { value: unknown; path: JsonPath };
    if (typeof at !== 'object' || at === null) continue;
    if (path.length >= maxDepth) return path.length === 0 ? [] : path;
    const entries: [string | number, unknown][] = Array.isArray(at)
      ? at.map((item, i) => [i, item])
      : Object.entries(at);
    for (const [key, item] of entries) {
      if (typeof item === 'object' && item !== null)
        stack.push({ value: item, path: [...path, key] });
    }
  }
  return undefined;
}
