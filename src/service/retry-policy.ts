import { computeBackoffDelay } from './backoff.ts';

/** How GET requests are retried. POST requests are never retried by the client. */
export interface RetryOptions {
  /** Retries after the first attempt (0 turns retrying off). @defaultValue 3 */
  limit?: number;
  /** First backoff step; it doubles on every retry. @defaultValue 250 */
  baseDelayMs?: number;
  /** Cap of the backoff step (not of a `Retry-After` wait). @defaultValue 10_000 */
  maxDelayMs?: number;
  /**
   * Longest `Retry-After` the client waits for. A longer one is not waited out: the error
   * surfaces at once so the caller (e.g. a job queue) can reschedule instead of holding a slot.
   * @defaultValue 60_000
   */
  maxRetryAfterMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = {
  limit: 3,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 60_000,
};

/** The facts about a failed attempt that decide whether to try again. */
export interface FailedAttempt {
  method: string;
  /** Whether the failure may go away by itself (429, 502-504, network, timeout). */
  retryable: boolean;
  /** Retries already made for this call. */
  retries: number;
  /** The server's `Retry-After`, in milliseconds, if it sent one. */
  retryAfterMs: number | undefined;
}

/**
 * Milliseconds to wait before the next attempt, or `undefined` to give up and surface the error.
 * Only GETs are retried: re-sending a POST could submit a concordance query twice, so that
 * decision is left to the caller, even after a timeout or a connection reset.
 */
export function nextRetryDelay(
  attempt: FailedAttempt,
  options: Required<RetryOptions>,
  random: () => number = Math.random,
): number | undefined {
  if (attempt.method !== 'GET' || !attempt.retryable || attempt.retries >= options.limit) {
    return undefined;
  }
  if (attempt.retryAfterMs !== undefined) {
    return attempt.retryAfterMs > options.maxRetryAfterMs ? undefined : attempt.retryAfterMs;
  }
  return computeBackoffDelay(attempt.retries, options, random);
}
