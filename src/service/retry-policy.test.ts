import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, nextRetryDelay, type FailedAttempt } from './retry-policy.ts';

const get: FailedAttempt = { method: 'GET', retryable: true, retries: 0, retryAfterMs: undefined };
const delay = (over: Partial<FailedAttempt>, options = DEFAULT_RETRY) =>
  nextRetryDelay({ ...get, ...over }, options, () => 1);

describe('nextRetryDelay', () => {
  it('backs off exponentially for retryable GET failures', () => {
    expect([0, 1, 2].map((retries) => delay({ retries }))).toEqual([250, 500, 1000]);
  });

  it('gives up after the limit', () => {
    expect(delay({ retries: 3 })).toBeUndefined();
    expect(delay({ retries: 0 }, { ...DEFAULT_RETRY, limit: 0 })).toBeUndefined();
  });

  it('never retries a POST, whatever the failure', () => {
    expect(delay({ method: 'POST' })).toBeUndefined();
    expect(delay({ method: 'POST', retryAfterMs: 1000 })).toBeUndefined();
  });

  it('does not retry failures that will not go away', () => {
    expect(delay({ retryable: false })).toBeUndefined();
  });

  it('waits as long as Retry-After says, beyond the backoff cap', () => {
    expect(delay({ retryAfterMs: 1000 })).toBe(1000);
    expect(delay({ retryAfterMs: 0 })).toBe(0);
    expect(delay({ retryAfterMs: 30_000 })).toBe(30_000);
    expect(delay({ retryAfterMs: 60_000 })).toBe(60_000);
  });

  it('surfaces the error rather than wait for a Retry-After above maxRetryAfterMs', () => {
    expect(delay({ retryAfterMs: 60_001 })).toBeUndefined();
    expect(
      delay({ retryAfterMs: 2000 }, { ...DEFAULT_RETRY, maxRetryAfterMs: 1000 }),
    ).toBeUndefined();
  });
});
