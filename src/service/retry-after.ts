/**
 * Reads a `Retry-After` header: delay-seconds (`120`) or an HTTP-date. Returns the wait in
 * milliseconds, 0 for a date in the past, or `undefined` when the header is absent or unreadable
 * (an unreadable header falls back to our own backoff rather than to no wait at all).
 */
export function parseRetryAfter(
  header: string | readonly string[] | undefined,
  now: number = Date.now(),
): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // Date.parse also accepts loose forms such as "5"; only plain seconds were wanted above, so
  // require something date-like (a letter) before trusting it.
  if (!/[a-z]/i.test(value)) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
