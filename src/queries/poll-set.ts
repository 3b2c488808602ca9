import type { RedisClient } from '../queues/redis-client.ts';
import { LuaScript } from '../queues/lua-script.ts';
import { dueSetDepth, holdDueSet, type DueSetDepth } from './due-set.ts';
import type { TracedEnd } from './traced-end.ts';
import {
  outboxMember,
  parseOutboxMember,
  queryOutboxKey,
  type DueQuery,
  type Triggers,
} from './query-outbox.ts';

/**
 * The due set of polls of one partition: one sorted set whose members name a submitted query
 * (`<patient_service_id>|<ccsr_category>|<seq>`, as in the due set of new queries) and whose
 * scores are when it should be polled next (epoch ms). A query enters it in the same script that
 * stores its remote job (see QueryState.markSubmitted) and leaves it in the one that ends it.
 *
 * Everything a poll needs is in the query's coalescing hash (`qs:<psid>:<category>`, same hash
 * tag): `r:<seq>` its remote job (JSON {@link PolledRemoteJob}), `c:<seq>` its triggers,
 * `submitted` the newest submitted seq, `l:<seq>` how many leases it has had since its last
 * written outcome. The scripts build those keys from the partition's prefix: they share the due
 * set's hash tag, so this works on Redis Cluster.
 */

/** The key of the due set of polls under `prefix`. */
export function pollSetKey(prefix: string): string {
  return `${prefix}:qpoll`;
}

/** The key of the recent job latencies (ms) of `category` under `prefix`. */
export function latencyKey(prefix: string, category: string): string {
  return `${prefix}:qlat:${category}`;
}

/** The remote job of a submitted query as the poll set keeps it (`r:<seq>`). */
export interface PolledRemoteJob {
  remoteJobId: string;
  submittedAt: number;
  resubmits: number;
  recordVersion: number;
  /** The id of the query's result event. */
  queryId?: string;
  /** Polls made so far. @defaultValue 0 */
  polls?: number;
  /** When the last poll that found it still running was made (epoch ms). */
  lastPollAt?: number;
  /**
   * The W3C `traceparent` of its `cgs.submit` span (tracing on): the parent of every `cgs.poll`
   * span, so that the polls join the message's trace (and follow its sampling decision).
   */
  tp?: string;
}

/** A poll leased by {@link PollSet.lease}. */
export interface LeasedPoll extends DueQuery {
  member: string;
  /** When it was due (epoch ms): lateness is measured against it. */
  dueAt: number;
  /** The newest submitted seq of its key. */
  submitted: number;
  remote: PolledRemoteJob;
  triggers: Triggers | undefined;
  /** Leases since its last written outcome, this one included. */
  leases: number;
}

/**
 * What happens to a leased poll, written back by {@link PollSet.apply}. `polledAt`: when the poll
 * that led to it was made (its trace counts it: `polls`, `last_poll_at`); none when no poll was.
 */
export type PollWrite =
  /** Poll again at `at`, with the remote job's updated state. */
  | { kind: 'again'; poll: LeasedPoll; at: number; remote: PolledRemoteJob; polledAt?: number }
  /**
   * The query ended: forget its claim, submission and remote job; learn its latency; `end`: how,
   * for its trace (which also gives its result event's trace the query's feed), at `endedAt`.
   */
  | {
      kind: 'end';
      poll: LeasedPoll;
      latencyMs?: number;
      polledAt?: number;
      end?: TracedEnd;
      endedAt?: number;
    }
  /** The query goes back to submission (its poll leaves the set), due at `at`, `resubmits` after. */
  | { kind: 'resubmit'; poll: LeasedPoll; at: number; resubmits: number; polledAt?: number }
  /** Held (429, refused key): due again at `at`, lease count reset. */
  | { kind: 'hold'; poll: LeasedPoll; at: number };

/**
 * Leases due polls and reads each one's state, unless the partition is held or paused; drops a
 * member whose remote job is gone.
 */
const LEASE = LuaScript.load(new URL('./lua/lease-polls.lua', import.meta.url));

/**
 * Writes back a batch of outcomes of leased polls; a resubmitted query goes back to the due set
 * of new queries.
 */
const APPLY = LuaScript.load(new URL('./lua/apply-poll-writes.lua', import.meta.url));

export interface PollSetOptions {
  /** A worker connection of the partition. */
  redis: RedisClient;
  /** The partition's prefix (its hash tag). */
  prefix: string;
  /** The key whose existence holds the partition's polls (a rate limit), see {@link holdKey}. */
  holdKey: string;
  /** The key whose existence pauses the partition's polls (a refused API key). */
  pauseKey: string;
  /** @defaultValue 64 */
  latencyWindow?: number;
  /**
   * The message trace's retention, seconds: the polls and ends written back are noted in the
   * queries' traces. @defaultValue 0 (the trace off: nothing written)
   */
  traceTtlS?: number;
}

/** The key of a partition's rate-limit hold (a string that expires with the hold). */
export function holdKey(prefix: string): string {
  return `${prefix}:qhold`;
}

/** One partition's due set of polls (see the module's comment). */
export class PollSet {
  readonly key: string;
  readonly #o: PollSetOptions;

  constructor(options: PollSetOptions) {
    this.#o = options;
    this.key = pollSetKey(options.prefix);
  }

  /**
   * Leases up to `limit` polls due by `now` until `leaseUntil`; nothing while the partition is
   * held or paused.
   */
  async lease(now: number, limit: number, leaseUntil: number): Promise<LeasedPoll[]> {
    const flat = (await LEASE.run(
      this.#o.redis,
      [this.key, this.#o.holdKey, this.#o.pauseKey],
      [now, limit, leaseUntil, this.#o.prefix],
    )) as (string | number)[];
    const leased: LeasedPoll[] = [];
    for (let i = 0; i < flat.length; i += 6) {
      const member = String(flat[i]);
      const query = parseOutboxMember(member);
      if (query === undefined) continue;
      const triggers = String(flat[i + 4]);
      leased.push({
        ...query,
        member,
        dueAt: Number(flat[i + 1]),
        submitted: Number(flat[i + 2]),
        remote: JSON.parse(String(flat[i + 3])) as PolledRemoteJob,
        triggers: triggers === '' ? undefined : (JSON.parse(triggers) as Triggers),
        leases: Number(flat[i + 5]),
      });
    }
    return leased;
  }

  /** Writes back the outcomes of leased polls in one script call. */
  async apply(writes: readonly PollWrite[]): Promise<void> {
    if (writes.length === 0) return;
    const ops = writes.map((w) => ({ ...opOf(w), ...tracedOf(w) }));
    await APPLY.run(
      this.#o.redis,
      [this.key, queryOutboxKey(this.#o.prefix)],
      [this.#o.prefix, JSON.stringify(ops), this.#o.latencyWindow ?? 64, this.#o.traceTtlS ?? 0],
    );
  }

  /** Holds the partition's leases for `ms` (a 429); an existing longer hold stays. */
  async hold(ms: number, reason: string): Promise<void> {
    await holdDueSet(this.#o.redis, this.#o.holdKey, ms, reason);
  }

  /** The recent latencies (ms) of `category`'s jobs in this partition, newest first. */
  async latencies(category: string): Promise<number[]> {
    const values = await this.#o.redis.lrange(latencyKey(this.#o.prefix, category), 0, -1);
    return values.map(Number).filter((n) => Number.isFinite(n));
  }

  /** How full the set is at `now`. */
  depth(now: number): Promise<DueSetDepth> {
    return dueSetDepth(this.#o.redis, this.key, now);
  }
}

/** The script's op of a write. */
function opOf(w: PollWrite): Record<string, string | number> {
  const m = w.poll.member;
  switch (w.kind) {
    case 'again':
      return { m, k: 'again', at: w.at, r: JSON.stringify(w.remote) };
    case 'hold':
      return { m, k: 'again', at: w.at };
    case 'resubmit':
      return { m, k: 'resubmit', at: w.at, n: w.resubmits };
    case 'end':
      return w.latencyMs === undefined ? { m, k: 'end' } : { m, k: 'end', lat: w.latencyMs };
  }
}

/** What the op adds for the query's trace: `p` a poll's time; an end's `t`, `o`, `e`, `ev`. */
function tracedOf(w: PollWrite): Record<string, string | number | undefined> {
  const polled = w.kind !== 'hold' && w.polledAt !== undefined ? { p: w.polledAt } : {};
  if (w.kind !== 'end' || w.end === undefined) return polled;
  const { outcome, errorCode, eventId } = w.end;
  return {
    ...polled,
    t: w.endedAt ?? Date.now(),
    o: outcome,
    ...(errorCode === undefined ? {} : { e: errorCode }),
    ...(eventId === undefined ? {} : { ev: eventId }),
  };
}

/** The poll set member of a query. */
export function pollMember(query: DueQuery): string {
  return outboxMember(query);
}
