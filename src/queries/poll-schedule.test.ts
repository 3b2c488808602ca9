import { describe, expect, it } from 'vitest';
import { DEFAULT_POLL_SCHEDULE, pollDelayMs } from './poll-schedule.ts';

describe('pollDelayMs', () => {
  const middle = () => 0.5;

  it('starts at 1 s and doubles up to the 30 s cap', () => {
    const delays = Array.from({ length: 8 }, (_, poll) =>
      pollDelayMs(poll, DEFAULT_POLL_SCHEDULE, middle),
    );
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('moves each delay by at most 20 % either way', () => {
    expect(pollDelayMs(0, DEFAULT_POLL_SCHEDULE, () => 0)).toBe(800);
    expect(pollDelayMs(0, DEFAULT_POLL_SCHEDULE, () => 1)).toBe(1_200);
    expect(pollDelayMs(9, DEFAULT_POLL_SCHEDULE, () => 1)).toBe(36_000);
  });

  it('follows configured values', () => {
    const options = {
      ...DEFAULT_POLL_SCHEDULE,
      firstDelayMs: 100,
      factor: 3,
      maxDelayMs: 500,
      jitter: 0,
    };
    expect([0, 1, 2, 3].map((p) => pollDelayMs(p, options))).toEqual([100, 300, 500, 500]);
  });
});
