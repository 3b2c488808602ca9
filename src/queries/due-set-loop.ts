import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import type { LatencyProfiles } from './latency-profiles.ts';
import type { PollScheduleOptions } from './poll-schedule.ts';
import type { LifecycleRules } from './query-lifecycle.ts';

/** What both schedulers of a partition's due sets (submissions, polls) are given alike. */
export interface DueSetSchedulerOptions<Outcome> {
  /** The categories' recent job latencies, which the poll schedule learns from. */
  profiles: LatencyProfiles;
  rules: LifecycleRules;
  schedule: PollScheduleOptions;
  logger: Logger;
  metrics?: PipelineMetrics;
  /** Told of each query that ended here, once its outcome is written. */
  onOutcome?: (outcome: Outcome) => void;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/** How a loop takes: every `interval_ms` up to `batch` entries, `concurrency` in flight at most. */
export interface DueSetSlots {
  interval_ms: number;
  batch: number;
  concurrency: number;
}

/** The warning logged once when taking or writing back fails, and the line once it works again. */
export interface DueSetMessages {
  failing: string;
  recovered: string;
}

/**
 * The loop both schedulers of a partition's due sets run (submissions and polls; the shape of
 * Sidekiq's scheduled-set poller): every `intervalMs` one call takes up to a batch of due entries
 * (never more than the free slots of `concurrency`) and starts working on them; it takes again at
 * once while a take got all it asked for and slots are free, and whenever a batch ends while more
 * was due. What a dead process had taken comes due again when its lease runs out.
 */
export abstract class DueSetLoop<T> {
  readonly #slots: DueSetSlots;
  readonly #logger: Logger;
  readonly #messages: DueSetMessages;
  readonly #abort = new AbortController();
  readonly #now: () => number;
  readonly #batches = new Set<Promise<void>>();
  #inFlight = 0;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #started = false;
  #stopped = false;
  #failing = false;
  #again = false;
  /** The last take got all it asked for: more may be due. */
  #more = false;

  protected constructor(
    options: Pick<DueSetSchedulerOptions<unknown>, 'logger' | 'now'>,
    slots: DueSetSlots,
    messages: DueSetMessages,
  ) {
    this.#slots = slots;
    this.#logger = options.logger;
    this.#messages = messages;
    this.#now = options.now ?? Date.now;
  }

  /** Takes (leases) up to `limit` due entries at `now`. */
  protected abstract take(limit: number, now: number): Promise<T[]>;

  /** Works a batch of taken entries through and writes their outcomes back. */
  protected abstract run(taken: T[], takenAt: number): Promise<void>;

  /** Aborted when {@link close} stops waiting: what is still in flight gives up. */
  protected get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Entries taken and not yet written back. */
  get inFlight(): number {
    return this.#inFlight;
  }

  #free(): number {
    return this.#slots.concurrency - this.#inFlight;
  }

  /**
   * Takes what is due (as many as free slots allow) and starts working on it; resolves once the
   * take is done, with how many were taken. {@link settled} waits for the work itself.
   */
  async tick(): Promise<number> {
    const free = this.#free();
    if (free <= 0 || this.#stopped) return 0;
    const limit = Math.min(this.#slots.batch, free);
    const now = this.#now();
    // The slots are taken before the lease, so that ticks running at once never over-take.
    this.#inFlight += limit;
    let taken: T[];
    try {
      taken = await this.take(limit, now);
    } finally {
      this.#inFlight -= limit;
    }
    this.#more = taken.length === limit;
    if (taken.length === 0) return 0;
    this.#inFlight += taken.length;
    const batch = this.run(taken, now)
      .catch((err: unknown) => this.#failed(err))
      .finally(() => {
        this.#inFlight -= taken.length;
        this.#batches.delete(batch);
        // Slots are free again and more was due: take at once rather than at the next interval.
        if (this.#more && this.#started) this.#kick();
      });
    this.#batches.add(batch);
    return taken.length;
  }

  /** Resolves once every batch started so far has written its outcomes (or failed). */
  async settled(): Promise<void> {
    while (this.#batches.size > 0) await Promise.all([...this.#batches]);
  }

  /** Ticks every `intervalMs`, and at once whenever more may be due (see the class). */
  start(): void {
    this.#started = true;
    this.#timer = setInterval(() => this.#kick(), this.#slots.interval_ms);
    this.#timer.unref();
    this.#kick();
  }

  #kick(): void {
    if (this.#stopped) return;
    if (this.#ticking !== undefined) {
      this.#again = true;
      return;
    }
    this.#ticking = (async () => {
      try {
        do {
          this.#again = false;
          while (!this.#stopped && (await this.tick()) > 0 && this.#more && this.#free() > 0);
        } while (this.#again && !this.#stopped);
        if (this.#failing) {
          this.#failing = false;
          this.#logger.info(this.#messages.recovered);
        }
      } catch (err) {
        this.#failed(err);
      }
    })().finally(() => {
      this.#ticking = undefined;
    });
  }

  /**
   * Stops taking and waits up to `graceMs` for the work in flight to be written back; what is
   * still out is abandoned (its leases run out and it comes due again). True when everything was
   * written back.
   */
  async close(graceMs = 2_000): Promise<boolean> {
    this.#stopped = true;
    clearInterval(this.#timer);
    const pending = Promise.all([this.#ticking, this.settled()]).then(() => true);
    const done = await Promise.race([pending, delay(graceMs, false, { ref: false })]);
    this.#abort.abort(new Error('closing'));
    return done;
  }

  #failed(err: unknown): void {
    if (this.#failing) return;
    this.#failing = true;
    const e = err as Error;
    this.#logger.warn({ err: { name: e.name, message: e.message } }, this.#messages.failing);
  }
}
