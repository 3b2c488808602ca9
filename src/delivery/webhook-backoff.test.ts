import { describe, expect, it } from 'vitest';
import { webhookRetryDelayMs } from './webhook-backoff.ts';

const options = { firstDelayMs: 5_000, maxDelayMs: 3_600_000, jitter: 0.2 };
const middle = () => 0.5;

describe('webhookRetryDelayMs', () => {
  it('starts at the first delay and doubles', () => {
    expect([1, 2, 3, 4].map((n) => webhookRetryDelayMs(n, options, middle))).toEqual([
      5_000, 10_000, 20_000, 40_000,
    ]);
  });

  it('is capped, jitter included, even after very many attempts', () => {
    expect(webhookRetryDelayMs(11, options, middle)).toBe(3_600_000);
    expect(webhookRetryDelayMs(5_000, options, () => 1)).toBe(3_600_000);
  });

  it('varies by up to the jitter either way', () => {
    expect(webhookRetryDelayMs(1, options, () => 0)).toBe(4_000);
    expect(webhookRetryDelayMs(1, options, () => 1)).toBe(6_000);
    expect(webhookRetryDelayMs(1, { ...options, jitter: 0 }, () => 0)).toBe(5_000);
  });
});
