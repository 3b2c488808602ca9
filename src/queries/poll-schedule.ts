/** When to poll a remote job again. */
export interface PollScheduleOptions {
  /** @defaultValue 1000 */
  firstDelayMs: number;
  /** @defaultValue 2 */
  factor: number;
  /** @defaultValue 30_000 */
  maxDelayMs: number;
  /** Each delay is moved by up to this fraction either way. @defaultValue 0.2 */
  jitter: number;
  /** A query still pending this long after submission fails as `timed_out`. @defaultValue 1_800_000 */
  deadlineMs: number;
}

export const DEFAULT_POLL_SCHEDULE: PollScheduleOptions = {
  firstDelayMs: 1_000,
  factor: 2,
  maxDelayMs: 30_000,
  jitter: 0.2,
  deadlineMs: 30 * 60_000,
};

/**
 * The delay before poll number `poll` (0 = the first poll after submission): exponential,
 * capped, with jitter so that thousands of queries submitted together do not poll together.
 */
export function pollDelayMs(
  poll: number,
  options: PollScheduleOptions,
  random: () => number = Math.random,
): number {
  const base = Math.min(options.maxDelayMs, options.firstDelayMs * options.factor ** poll);
  const spread = base * options.jitter * (2 * random() - 1);
  return Math.max(0, Math.round(base + spread));
}
