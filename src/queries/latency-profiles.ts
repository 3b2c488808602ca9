import { latencyProfile, type LatencyProfile } from './adaptive-schedule.ts';

/** Where recent latencies of a category come from (a partition's poll set). */
export interface LatencySource {
  latencies(category: string): Promise<number[]>;
}

export interface LatencyProfilesOptions {
  source: LatencySource;
  /**
   * How long a category's profile is used before it is read again.
   * @defaultValue 2000
   */
  refreshMs?: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * The latency profile of each category, read from Redis at most every `refreshMs` per category:
 * the schedule follows what the service's recent jobs took, as every worker of the partition
 * wrote them, without a read per poll.
 */
export class LatencyProfiles {
  readonly #source: LatencySource;
  readonly #refreshMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { at: number; profile: LatencyProfile | undefined }>();

  constructor({ source, refreshMs = 2_000, now = Date.now }: LatencyProfilesOptions) {
    this.#source = source;
    this.#refreshMs = refreshMs;
    this.#now = now;
  }

  /** The profile of `category` as last read (`undefined` until learnt or read). */
  get(category: string): LatencyProfile | undefined {
    return this.#cache.get(category)?.profile;
  }

  /** Reads again the profiles of those `categories` whose copy is older than `refreshMs`. */
  async refresh(categories: Iterable<string>): Promise<void> {
    const now = this.#now();
    const stale = [...new Set(categories)].filter(
      (category) => now - (this.#cache.get(category)?.at ?? -Infinity) >= this.#refreshMs,
    );
    await Promise.all(
      stale.map(async (category) => {
        const profile = latencyProfile(await this.#source.latencies(category));
        this.#cache.set(category, { at: now, profile });
      }),
    );
  }
}
