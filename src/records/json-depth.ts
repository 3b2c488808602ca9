/** A path into a JSON value: object keys and array indexes. */
export type JsonPath = (string | number)[];

/**
 * The path of the first place where `value` nests deeper than `maxDepth` objects or arrays (the
 * value itself being level 1), or undefined when it does not. The walk never goes below level
 * `maxDepth + 1`, whatever the input: a value nested 100,000 deep costs no more than one nested
 * `maxDepth + 1` deep, and the call stack stays as shallow. Depth first, the last member of each
 * object or array first; the path is built only for the place found.
 */
export function pathDeeperThan(value: unknown, maxDepth: number): JsonPath | undefined {
  const path: JsonPath = [];
  const visit = (at: unknown): boolean => {
    if (typeof at !== 'object' || at === null) return false;
    if (path.length >= maxDepth) return true;
    if (Array.isArray(at)) {
      for (let i = at.length - 1; i >= 0; i--) {
        path.push(i);
        if (visit(at[i])) return true;
        path.pop();
      }
      return false;
    }
    const keys = Object.keys(at);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string;
      path.push(key);
      if (visit((at as Record<string, unknown>)[key])) return true;
      path.pop();
    }
    return false;
  };
  return visit(value) ? path : undefined;
}
