import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { LuaScript } from '../queues/lua-script.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { DueSetLoop } from './due-set-loop.ts';
import { submissionJobId } from './query-job.ts';
import { parseOutboxMember, queryOutboxKey, type DueQuery } from './query-outbox.ts';

/** An opened query read from the outbox, to be added to the partition's queue. */
export interface OutboxEntry extends DueQuery {
  member: string;
  /** The due score as read (epoch ms, as Redis wrote it): the entry leaves only if unchanged. */
  score: string;
  /** When it becomes due (epoch ms): the end of its debounce. */
  dueAt: number;
  /** Resubmissions so far (a resubmitted query is a new job). */
  resubmits: number;
}

/** Reads the first entries of the outbox, under the partition's relay lease. */
const TAKE = LuaScript.load(new URL('./lua/take-outbox.lua', import.meta.url));

/** Removes the entries that were added, unless they changed meanwhile. */
const RELEASE = LuaScript.load(new URL('./lua/release-outbox.lua', import.meta.url));

/** The key of a partition's relay lease (one relay reads the outbox at a time). */
export function relayLeaseKey(prefix: string): string {
  return `${prefix}:qrelay`;
}

export interface OutboxRelayOptions {
  /** A worker connection of the partition. */
  redis: RedisClient;
  /** The partition's prefix (its hash tag). */
  prefix: string;
  /**
   * Adds the entries to the partition's `concordance-queries` queue in one call, each as the job
   * of its query (its id names the query, so adding it again is a no-op), delayed until `dueAt`.
   */
  enqueue(entries: readonly OutboxEntry[], now: number): Promise<void>;
  /**
   * `queries.dispatch`: every `interval_ms` up to `batch` entries; `lease_ms`: how long the relay
   * lease lasts (a killed relay's partition is taken over after it).
   */
  dispatch: { interval_ms: number; batch: number; lease_ms: number };
  logger: Logger;
  /** @defaultValue `Date.now` */
  now?: () => number;
  /**
   * The message trace's retention, seconds: each relayed query's trace notes its job
   * (`queued_at`, `job_id`). @defaultValue 0 (the trace off: nothing written)
   */
  traceTtlS?: number;
}

/**
 * The relay of a partition's transactional outbox: ingest's commit script writes each opened
 * query into the outbox (`qdue`) atomically with the record; the relay moves the entries into the
 * partition's `concordance-queries` queue, one `addBulk` per batch, delayed by what is left of
 * their debounce, and removes them only once they were added. A relay killed between the two
 * leaves the entries in the outbox; the next read adds them again, which the queue ignores (the
 * job id is the query's). One relay per partition reads at a time (a lease renewed at each read),
 * so that workers serving the same partition do not add the same batch twice.
 */
export class OutboxRelay extends DueSetLoop<OutboxEntry> {
  readonly #o: OutboxRelayOptions;
  readonly #token = randomUUID();
  readonly #key: string;
  readonly #lease: string;

  constructor(options: OutboxRelayOptions) {
    // One batch at a time: the relay is a single reader.
    const { interval_ms, batch } = options.dispatch;
    super(
      options,
      { interval_ms, batch, concurrency: batch },
      {
        failing: 'the outbox of opened queries could not be relayed; it is tried again',
        recovered: 'the outbox of opened queries is being relayed again',
      },
    );
    this.#o = options;
    this.#key = queryOutboxKey(options.prefix);
    this.#lease = relayLeaseKey(options.prefix);
  }

  protected async take(limit: number): Promise<OutboxEntry[]> {
    const flat = (await TAKE.run(
      this.#o.redis,
      [this.#key, this.#lease],
      [this.#o.prefix, limit, this.#token, this.#o.dispatch.lease_ms],
    )) as string[];
    const entries: OutboxEntry[] = [];
    for (let i = 0; i < flat.length; i += 3) {
      const member = String(flat[i]);
      const query = parseOutboxMember(member);
      const score = String(flat[i + 1]);
      // A member of another shape is never written; it is left where it is.
      if (query === undefined) continue;
      entries.push({
        ...query,
        member,
        score,
        dueAt: Number(score),
        resubmits: Number(flat[i + 2]),
      });
    }
    return entries;
  }

  protected async run(entries: OutboxEntry[], takenAt: number): Promise<void> {
    await this.#o.enqueue(entries, takenAt);
    // The trace's `queued_at` is the batch's time, the one its jobs' delays count from: never
    // after a claim of a job due at once (which may run before this release).
    await RELEASE.run(
      this.#o.redis,
      [this.#key],
      [
        this.#o.prefix,
        this.#o.traceTtlS ?? 0,
        takenAt,
        ...entries.flatMap((e) => [e.member, e.score, submissionJobId(e)]),
      ],
    );
  }
}
