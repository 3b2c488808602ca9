/** The JSON value of an HTTP answer's body, or undefined when it is not JSON. */
export function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A base URL ending in `/`, so that `new URL(path, base)` keeps its last segment. */
export const withSlash = (url: string) => (url.endsWith('/') ? url : `${url}/`);
