/** The webhook's retry schedule (`delivery.webhook.backoff`). */
export interface WebhookBackoffOptions {
  /** Delay before the second attempt. @defaultValue 5_000 */
  firstDelayMs: number;
  /** No delay is longer than this, jitter included. @defaultValue 3_600_000 */
  maxDelayMs: number;
  /** Each delay varies by up to this fraction either way. @defaultValue 0.2 */
  jitter: number;
}

/**
 * How long to wait after failed attempt number `attempt` (1 for the first): the first delay,
 * doubling with each attempt, capped, with jitter so that many events retried after one outage do
 * not all come back at the same instant.
 */
export function webhookRetryDelayMs(
  attempt: number,
  { firstDelayMs, maxDelayMs, jitter }: WebhookBackoffOptions,
  random: () => number = Math.random,
): number {
  // 2 ** 60 already exceeds any cap; bounding the exponent keeps the arithmetic finite.
  const exponential = firstDelayMs * 2 ** Math.min(Math.max(attempt - 1, 0), 60);
  const base = Math.min(exponential, maxDelayMs);
  const jittered = base * (1 + jitter * (2 * random() - 1));
  return Math.max(0, Math.round(Math.min(jittered, maxDelayMs)));
}
