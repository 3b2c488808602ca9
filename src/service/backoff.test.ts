import { describe, expect, it } from 'vitest';
import { computeBackoffDelay } from './backoff.ts';

const options = { baseDelayMs: 250, maxDelayMs: 10_000 };

describe('computeBackoffDelay', () => {
  it('doubles per retry, the jitter spanning the upper half of the step', () => {
    expect([0, 1, 2, 3].map((r) => computeBackoffDelay(r, options, () => 0))).toEqual([
      125, 250, 500, 1000,
    ]);
    expect([0, 1, 2, 3].map((r) => computeBackoffDelay(r, options, () => 1))).toEqual([
      250, 500, 1000, 2000,
    ]);
    expect(computeBackoffDelay(1, options, () => 0.5)).toBe(375);
  });

  it('caps the step at maxDelayMs', () => {
    expect(computeBackoffDelay(10, options, () => 1)).toBe(10_000);
    expect(computeBackoffDelay(60, options, () => 0)).toBe(5_000);
  });

  it('stays within bounds for any random value', () => {
    for (let i = 0; i < 200; i++) {
      const delay = computeBackoffDelay(2, options);
      expect(delay).toBeGreaterThanOrEqual(500);
      expect(delay).toBeLessThanOrEqual(1000);
    }
  });
});
