import { pollDelayMs, type PollScheduleOptions } from './poll-schedule.ts';

/**
 * When to poll a remote job again, learnt from how long the service's recent jobs of the same
 * category took. Until enough latencies are known the configured exponential schedule applies
 * (see {@link pollDelayMs}); after that:
 *
 * - the first poll comes when the fastest recent jobs ended (the low quantile), never later;
 * - inside the learnt range polls come every `step`: a tenth of the elapsed time, at most a sixth
 *   of the range, at least `firstDelayMs` — a stable category (say 60 s ± 20 %) is polled every
 *   few seconds around its usual end, a wide one (5-60 s) geometrically;
 * - past the learnt range the delay grows with the elapsed time (a quarter of it), capped by
 *   `maxDelayMs`.
 *
 * The deadline and a `Retry-After` from the service are applied by the caller (they win).
 */
export interface LatencyProfileOptions {
  /**
   * Latencies needed before the profile replaces the configured schedule.
   * @defaultValue 5
   */
  minSamples?: number;
  /** @defaultValue 0.05 */
  lowQuantile?: number;
  /** @defaultValue 0.95 */
  highQuantile?: number;
}

/** Recent latencies of one category, sorted, with the range the schedule aims at. */
export interface LatencyProfile {
  /** The low quantile (ms): no poll before it is useful for most jobs. */
  low: number;
  /** The high quantile (ms): most jobs have ended by then. */
  high: number;
  samples: number;
}

/** The profile of `latenciesMs` (unsorted), or `undefined` while there are too few. */
export function latencyProfile(
  latenciesMs: readonly number[],
  options: LatencyProfileOptions = {},
): LatencyProfile | undefined {
  const { minSamples = 5, lowQuantile = 0.05, highQuantile = 0.95 } = options;
  const sorted = latenciesMs.filter((ms) => Number.isFinite(ms) && ms >= 0).sort((a, b) => a - b);
  if (sorted.length < minSamples) return undefined;
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { low: at(lowQuantile), high: at(highQuantile), samples: sorted.length };
}

/**
 * The delay before poll number `polls` (0 = the first after submission), `elapsedMs` after the
 * submission, following `profile` when there is one. Jitter (`options.jitter`) only ever brings a
 * poll forward, so that a learnt first poll is not late for the fastest jobs.
 */
export function adaptiveDelayMs(
  polls: number,
  elapsedMs: number,
  profile: LatencyProfile | undefined,
  options: PollScheduleOptions,
  random: () => number = Math.random,
): number {
  if (profile === undefined) return pollDelayMs(polls, options, random);
  const minStep = options.firstDelayMs;
  const early = (ms: number) => Math.max(minStep, Math.round(ms * (1 - options.jitter * random())));
  if (elapsedMs < profile.low) return early(profile.low - elapsedMs);
  const rangeStep = (elapsed: number) =>
    Math.max(minStep, Math.min(0.1 * elapsed, (profile.high - profile.low) / 6));
  if (elapsedMs <= profile.high) return early(rangeStep(elapsedMs));
  // Past the range: twice the range's end cadence first (the slowest usual jobs are found soon),
  // then a quarter of the time past it (a job that hangs is polled ever more rarely), capped.
  const past = Math.max(2 * rangeStep(profile.high), 0.25 * (elapsedMs - profile.high));
  return Math.min(options.maxDelayMs, early(past));
}

/**
 * A latency estimate for a job found ended at `detectedAt` whose previous poll (or submission)
 * at `previousAt` found it still running: the middle of the two.
 */
export function latencyEstimateMs(submittedAt: number, previousAt: number, detectedAt: number) {
  return Math.max(0, Math.round((previousAt + detectedAt) / 2 - submittedAt));
}
