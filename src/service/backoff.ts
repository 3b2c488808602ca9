/** Bounds of the exponential backoff between retries. */
export interface BackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * Delay before retry number `retry` (0 for the first retry): the exponential step
 * `baseDelayMs * 2^retry`, capped at `maxDelayMs`, then "equal jitter" — half of it fixed, half
 * random. Workers polling the same service after an outage thus spread out, while a retry never
 * comes back almost at once as it could with full jitter.
 */
export function computeBackoffDelay(
  retry: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const step = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** retry);
  return Math.round(step / 2 + (random() * step) / 2);
}
