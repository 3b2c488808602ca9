/**
 * Paces the import's patients by the queries' backlog, so that live updates keep their latency:
 * before each patient is committed, the queries waiting to run (in the outbox, and waiting,
 * delayed by the debounce or prioritized in the queue: every partition's) must be fewer than
 * `maxWaiting`. A live update's queries join
 * the same queue, so they wait behind at most about `maxWaiting` of the import's: the import takes
 * the workers' capacity only while nothing else needs it. 0 turns pacing off.
 * See docs/bulk-import.md, "Pacing".
 */
export class ImportPacer {
  readonly #backlog: () => Promise<number>;
  readonly #maxWaiting: number;
  readonly #pollMs: number;
  readonly #now: () => number;
  readonly #onWait: ((backlog: number) => void) | undefined;
  readonly #wait: (ms: number) => Promise<void>;
  #known = 0;
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<number> | undefined;
  /** Times a patient had to wait (the summary's `paced`). */
  waits = 0;

  constructor(options: {
    backlog: () => Promise<number>;
    maxWaiting: number;
    /** How often the backlog is read while it is high. @defaultValue 200 ms */
    pollMs?: number;
    now?: () => number;
    /** Told when a patient starts waiting, with the backlog read. */
    onWait?: (backlog: number) => void;
    /** Waits `ms` between two reads while the backlog is high. @defaultValue a timer */
    wait?: (ms: number) => Promise<void>;
  }) {
    this.#backlog = options.backlog;
    this.#maxWaiting = options.maxWaiting;
    this.#pollMs = options.pollMs ?? 200;
    this.#now = options.now ?? Date.now;
    this.#onWait = options.onWait;
    this.#wait = options.wait ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** The backlog, read at most once per poll interval however many lanes ask. */
  async #read(): Promise<number> {
    if (this.#now() - this.#readAt < this.#pollMs) return this.#known;
    this.#reading ??= this.#backlog().finally(() => {
      this.#reading = undefined;
    });
    this.#known = await this.#reading;
    this.#readAt = this.#now();
    return this.#known;
  }

  /**
   * Resolves once the backlog is under the import's share. The patient is counted as one query
   * more until {@link opened} says how many it opened: so lanes between two reads of the backlog
   * do not overshoot it.
   */
  async ready(): Promise<void> {
    if (this.#maxWaiting <= 0) return;
    let waited = false;
    for (
      let backlog = await this.#read();
      backlog >= this.#maxWaiting;
      backlog = await this.#read()
    ) {
      if (!waited) {
        this.waits++;
        this.#onWait?.(backlog);
      }
      waited = true;
      await this.#wait(this.#pollMs);
    }
    this.#known++;
  }

  /** The patient let through by {@link ready} opened `queries` (its reservation of one replaced). */
  opened(queries: number): void {
    if (this.#maxWaiting <= 0) return;
    this.#known += queries - 1;
  }
}
