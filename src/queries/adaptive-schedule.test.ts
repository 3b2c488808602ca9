import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  adaptiveDelayMs,
  latencyEstimateMs,
  latencyProfile,
  type LatencyProfile,
} from './adaptive-schedule.ts';
import { DEFAULT_POLL_SCHEDULE, pollDelayMs } from './poll-schedule.ts';
import { decidePoll, type LifecycleRules, type PollFacts } from './query-lifecycle.ts';

const SCHEDULE = DEFAULT_POLL_SCHEDULE;

/** A reproducible stream of floats in [0, 1): SHA-256 of the seed and a counter. */
function seededStream(seed: string): () => number {
  let n = 0;
  return () => createHash('sha256').update(`${seed}:${n++}`).digest().readUInt32BE(0) / 2 ** 32;
}
const never = () => 0;
const most = () => 1;

describe('latencyProfile', () => {
  it('is undefined until minSamples latencies are known', () => {
    expect(latencyProfile([])).toBeUndefined();
    expect(latencyProfile([1, 2, 3, 4])).toBeUndefined();
    expect(latencyProfile([1, 2, 3, 4, 5])).toEqual({ low: 1, high: 5, samples: 5 });
    expect(latencyProfile([1, 2, 3], { minSamples: 3 })).toEqual({ low: 1, high: 3, samples: 3 });
  });

  it('takes the low and high quantiles of the latencies, in any order', () => {
    const latencies = Array.from({ length: 100 }, (_, i) => ((i * 37) % 100) + 1);
    expect(latencyProfile(latencies)).toEqual({ low: 6, high: 96, samples: 100 });
    expect(latencyProfile(latencies, { lowQuantile: 0.5, highQuantile: 1 })).toEqual({
      low: 51,
      high: 100,
      samples: 100,
    });
  });

  it('ignores NaN, infinite and negative latencies, also when counting samples', () => {
    const odd = [Number.NaN, -1, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
    expect(latencyProfile([...odd, 10, 20, 30, 40])).toBeUndefined();
    expect(latencyProfile([50, ...odd, 10, 0, 30, 40])).toEqual({ low: 0, high: 50, samples: 5 });
  });

  it('leaves its input as it was', () => {
    const latencies = [5, 4, 3, 2, 1];
    latencyProfile(latencies);
    expect(latencies).toEqual([5, 4, 3, 2, 1]);
  });
});

describe('adaptiveDelayMs', () => {
  const profile: LatencyProfile = { low: 40_000, high: 70_000, samples: 64 };

  it('without a profile follows pollDelayMs, drawing the same random', () => {
    for (const r of [0, 0.25, 0.5, 0.999]) {
      for (let polls = 0; polls < 9; polls++) {
        const random = () => r;
        expect(adaptiveDelayMs(polls, 12_345, undefined, SCHEDULE, random)).toBe(
          pollDelayMs(polls, SCHEDULE, random),
        );
      }
    }
  });

  it('comes first at the low quantile; jitter only brings it earlier', () => {
    expect(adaptiveDelayMs(0, 0, profile, SCHEDULE, never)).toBe(40_000);
    expect(adaptiveDelayMs(0, 0, profile, SCHEDULE, most)).toBe(32_000);
    expect(adaptiveDelayMs(0, 0, profile, SCHEDULE, () => 0.5)).toBe(36_000);
    expect(adaptiveDelayMs(1, 30_000, profile, SCHEDULE, never)).toBe(10_000);
  });

  it('never comes sooner than firstDelayMs before the low quantile', () => {
    expect(adaptiveDelayMs(2, 39_500, profile, SCHEDULE, never)).toBe(1_000);
    expect(adaptiveDelayMs(2, 38_900, profile, SCHEDULE, most)).toBe(1_000);
    const slow = { ...SCHEDULE, firstDelayMs: 5_000 };
    expect(adaptiveDelayMs(0, 0, { low: 2_000, high: 3_000, samples: 5 }, slow, never)).toBe(5_000);
  });

  it('inside the range steps min(0.1 x elapsed, range / 6), at least firstDelayMs', () => {
    // range / 6 = 5 s
    expect(adaptiveDelayMs(3, 40_000, profile, SCHEDULE, never)).toBe(4_000);
    expect(adaptiveDelayMs(3, 45_000, profile, SCHEDULE, never)).toBe(4_500);
    expect(adaptiveDelayMs(3, 45_000, profile, SCHEDULE, most)).toBe(3_600);
    expect(adaptiveDelayMs(3, 65_000, profile, SCHEDULE, never)).toBe(5_000);
    expect(adaptiveDelayMs(3, 70_000, profile, SCHEDULE, never)).toBe(5_000);
    const narrow = { low: 10_000, high: 12_000, samples: 64 };
    expect(adaptiveDelayMs(3, 11_000, narrow, SCHEDULE, never)).toBe(1_000);
    expect(adaptiveDelayMs(3, 11_000, narrow, SCHEDULE, most)).toBe(1_000);
  });

  it("past the range waits twice the range's end cadence, then a quarter of the time past it, capped at maxDelayMs", () => {
    // The range's cadence at its end: a sixth of 30 s.
    expect(adaptiveDelayMs(9, 71_000, profile, SCHEDULE, never)).toBe(10_000);
    expect(adaptiveDelayMs(9, 80_000, profile, SCHEDULE, never)).toBe(10_000);
    expect(adaptiveDelayMs(9, 80_000, profile, SCHEDULE, most)).toBe(8_000);
    expect(adaptiveDelayMs(9, 119_000, profile, SCHEDULE, never)).toBe(12_250);
    expect(adaptiveDelayMs(9, 200_000, profile, SCHEDULE, never)).toBe(30_000);
    // A range narrower than firstDelayMs: its cadence is firstDelayMs (1 s), twice that past it.
    const fast = { low: 100, high: 200, samples: 5 };
    expect(adaptiveDelayMs(9, 1_000, fast, SCHEDULE, most)).toBe(1_600);
    expect(adaptiveDelayMs(9, 1_000, fast, SCHEDULE, never)).toBe(2_000);
  });

  it('is at least firstDelayMs, and never later than the low quantile before it', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 600_000 }),
        fc.nat({ max: 600_000 }),
        fc.nat({ max: 900_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (a, b, elapsed, r, firstDelayMs, jitter) => {
          const low = Math.min(a, b);
          const options = { ...SCHEDULE, firstDelayMs, jitter };
          const delay = adaptiveDelayMs(
            4,
            elapsed,
            { low, high: Math.max(a, b), samples: 5 },
            options,
            () => r,
          );
          expect(delay).toBeGreaterThanOrEqual(firstDelayMs);
          if (elapsed < low)
            expect(elapsed + delay).toBeLessThanOrEqual(Math.max(low, elapsed + firstDelayMs));
        },
      ),
    );
  });
});

describe('latencyEstimateMs', () => {
  it('is the middle between the last poll that found the job running and the one that found it ended', () => {
    expect(latencyEstimateMs(1_000, 41_000, 45_000)).toBe(42_000);
    expect(latencyEstimateMs(1_000, 1_000, 2_001)).toBe(501);
    expect(latencyEstimateMs(5_000, 1_000, 2_000)).toBe(0);
  });
});

const RULES: LifecycleRules = {
  deadlineMs: SCHEDULE.deadlineMs,
  resubmitLost: 0,
  deliverSuperseded: false,
  maxStalledCount: 0,
  authPauseMs: 60_000,
  submitAttempts: 1,
};

/**
 * Polls `learn + jobs` jobs one after the other as the poll scheduler does (the lifecycle's
 * decision with the adaptive delay, the profile of the last 64 learnt estimates, each ended job's
 * estimate learnt), and measures the last `jobs`: polls per job (mean) and the p95 of
 * (detection time - end time) / latency.
 */
function simulate(
  seed: string,
  latencyMs: (random: () => number) => number,
  jobs: number,
  learn = 64,
) {
  const latencies = seededStream(`${seed}/latency`);
  const jitter = seededStream(`${seed}/jitter`);
  const learnt: number[] = [];
  const polls: number[] = [];
  const lateness: number[] = [];
  for (let job = 0; job < learn + jobs; job++) {
    const endsAt = latencyMs(latencies);
    const profile = latencyProfile(learnt);
    let facts: PollFacts = { submittedAt: 0, polls: 0, resubmits: 0, superseded: false, leases: 1 };
    let previous = 0;
    let now = adaptiveDelayMs(0, 0, profile, SCHEDULE, jitter);
    for (;;) {
      const at = now;
      const answer =
        at >= endsAt
          ? { kind: 'success' as const, concordance: null }
          : { kind: 'pending' as const };
      const decision = decidePoll(facts, answer, RULES, at, (n) =>
        adaptiveDelayMs(n, at, profile, SCHEDULE, jitter),
      );
      if (decision.kind !== 'poll_again') {
        expect(decision).toMatchObject({ kind: 'end', outcome: 'completed' });
        learnt.unshift(latencyEstimateMs(0, previous, at));
        learnt.length = Math.min(learnt.length, 64);
        if (job >= learn) {
          polls.push(facts.polls + 1);
          lateness.push((at - endsAt) / endsAt);
        }
        break;
      }
      facts = { ...facts, polls: decision.polls };
      previous = at;
      now = decision.at;
    }
  }
  lateness.sort((a, b) => a - b);
  return {
    meanPolls: polls.reduce((sum, n) => sum + n, 0) / polls.length,
    p95Lateness: lateness[Math.ceil(0.95 * lateness.length) - 1] ?? Number.NaN,
  };
}

const uniform = (fromMs: number, toMs: number) => (random: () => number) =>
  fromMs + (toMs - fromMs) * random();

describe('the adaptive schedule (simulated service)', () => {
  it('polls a stable category (60 s ± 20 %) few times and finds jobs ended soon after', () => {
    const result = simulate('stable-60s', uniform(48_000, 72_000), 1_000);
    expect(result.meanPolls).toBeLessThanOrEqual(Math.log2(60) + 60 / 30 + 1);
    expect(result.p95Lateness).toBeLessThanOrEqual(0.15);
  });
});
