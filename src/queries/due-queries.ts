import { LuaScript } from '../queues/lua-script.ts';
import { dueSetDepth, holdDueSet, type DueSetDepth } from './due-set.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { parseOutboxMember, queryOutboxKey, type DueQuery } from './query-outbox.ts';
import type { PolledRemoteJob } from './poll-set.ts';
import type { Triggers } from './query-state.ts';

/**
 * The due set of new queries of one partition (`qdue`, written by ingest, see query-outbox.ts) as
 * the submission side leases it: one script claims up to a batch of due queries and reads, in the
 * same step, everything their submission needs — the claimed triggers, the newest submitted seq,
 * a remote job an earlier attempt stored, the attempt and lease counts, the opt-out, the record's
 * sealed fields and the sealed local id. All those keys share the partition's hash tag, so this
 * works on Redis Cluster.
 *
 * Per query the coalescing hash (`qs:<psid>:<category>`) holds, besides what QueryState keeps:
 * `i:<seq>` the query's id (its result event's), `l:<seq>` leases since its last written outcome,
 * `f:<seq>` failed attempts (transient), `n:<seq>` resubmissions (after lost remote jobs).
 */

/** A due query leased by {@link DueQueries.claim}, with what its submission needs. */
export interface ClaimedQuery extends DueQuery {
  member: string;
  dueAt: number;
  queryId: string;
  triggers: Triggers;
  /** The newest submitted seq of its key. */
  submitted: number;
  /** A remote job an earlier submission of this query stored (this or an older resubmission). */
  remote: PolledRemoteJob | undefined;
  resubmits: number;
  /** Failed (transient) attempts so far. */
  failures: number;
  /** Leases since its last written outcome, this one included (> 1: a worker died with it). */
  leases: number;
  optedOut: boolean;
  /** The record's hash fields, sealed (see RecordStore.opened); `version` null when none. */
  record: {
    version: string | null;
    sealed: string | null;
    clinical: string | null;
    updatedAt: string | null;
  };
  /** The sealed local id (`xwr:<psid>`), null when the crosswalk no longer knows the patient. */
  sealedLocalId: string | null;
}

/** What {@link DueQueries.begin} finds for a submission about to be sent. */
export type BeginAnswer =
  { state: 'new' | 'interrupted' } | { state: 'stored'; remote: PolledRemoteJob };

/** What happens to a claimed query, written back by {@link DueQueries.apply}. */
export type DueWrite =
  /** Ended (or superseded, stale): forgotten. */
  | { kind: 'end'; query: DueQuery & { member: string } }
  /** A transient failure: one more failed attempt; due again at `at`. */
  | { kind: 'retry'; query: DueQuery & { member: string }; at: number }
  /**
   * Due again at `at` without an attempt counted (held for a rate limit or a refused key, waiting
   * for a birth date); `abandon`: an answer came that created no job (the attempt is over).
   */
  | { kind: 'later'; query: DueQuery & { member: string }; at: number; abandon?: boolean };

/** Claims due queries and reads what their submission needs, in one step. */
const CLAIM = LuaScript.load(new URL('./lua/claim-due-queries.lua', import.meta.url));
/** The entries per claimed query in CLAIM's flat reply. */
const COLUMNS = 15;

/** Marks a batch's submissions begun, or finds the remote job an earlier attempt stored. */
const BEGIN = LuaScript.load(new URL('./lua/begin-submissions.lua', import.meta.url));

/** Writes back the outcomes of claimed queries. */
const APPLY = LuaScript.load(new URL('./lua/apply-due-writes.lua', import.meta.url));

export interface DueQueriesOptions {
  /** A worker connection of the partition. */
  redis: RedisClient;
  /** The partition's prefix (its hash tag). */
  prefix: string;
  /** The key whose existence holds the partition's submissions (a rate limit). */
  holdKey: string;
  /** The key whose existence pauses the partition's submissions (a refused API key). */
  pauseKey: string;
}

/** The key of a partition's rate-limit hold on submissions. */
export function submitHoldKey(prefix: string): string {
  return `${prefix}:qsubhold`;
}

/** One partition's due set of new queries, as the submission side leases it. */
export class DueQueries {
  readonly key: string;
  readonly #o: DueQueriesOptions;

  constructor(options: DueQueriesOptions) {
    this.#o = options;
    this.key = queryOutboxKey(options.prefix);
  }

  /**
   * Claims up to `queryIds.length` queries due by `now`, leased until `leaseUntil`; each new
   * query takes the next of `queryIds` as its id (one already given keeps its own). Nothing while
   * the partition is held or paused.
   */
  async claim(
    now: number,
    leaseUntil: number,
    queryIds: readonly string[],
  ): Promise<ClaimedQuery[]> {
    const flat = (await CLAIM.run(
      this.#o.redis,
      [this.key, this.#o.holdKey, this.#o.pauseKey],
      [now, queryIds.length, leaseUntil, this.#o.prefix, ...queryIds],
    )) as (string | number)[];
    const claimed: ClaimedQuery[] = [];
    const text = (i: number) => {
      const v = flat[i];
      return v === undefined || v === '' ? null : String(v);
    };
    for (let i = 0; i < flat.length; i += COLUMNS) {
      const member = String(flat[i]);
      const query = parseOutboxMember(member);
      if (query === undefined) continue;
      const remote = text(i + 4);
      claimed.push({
        ...query,
        member,
        dueAt: Number(flat[i + 1]),
        triggers: JSON.parse(String(flat[i + 2])) as Triggers,
        submitted: Number(flat[i + 3]),
        remote: remote === null ? undefined : (JSON.parse(remote) as PolledRemoteJob),
        resubmits: Number(flat[i + 5]),
        failures: Number(flat[i + 6]),
        queryId: String(flat[i + 7]),
        leases: Number(flat[i + 8]),
        optedOut: Number(flat[i + 9]) === 1,
        record: {
          version: text(i + 10),
          sealed: text(i + 11),
          clinical: text(i + 12),
          updatedAt: text(i + 13),
        },
        sealedLocalId: text(i + 14),
      });
    }
    return claimed;
  }

  /**
   * Marks the submissions of `queries` begun (one script for the batch; see
   * lua/begin-submissions.lua): 'stored' with the remote job when an earlier attempt of this
   * (re)submission stored one (never submit twice), 'interrupted' when an earlier attempt had
   * begun without storing its answer, else 'new'. Answers in the same order.
   */
  async begin(queries: readonly { member: string; resubmits: number }[]): Promise<BeginAnswer[]> {
    if (queries.length === 0) return [];
    const flat = (await BEGIN.run(
      this.#o.redis,
      [this.key],
      [this.#o.prefix, JSON.stringify(queries.map((q) => ({ m: q.member, n: q.resubmits })))],
    )) as string[];
    const answers: BeginAnswer[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const state = flat[i];
      answers.push(
        state === 'stored'
          ? { state, remote: JSON.parse(String(flat[i + 1])) as PolledRemoteJob }
          : { state: state === 'interrupted' ? 'interrupted' : 'new' },
      );
    }
    return answers;
  }

  /** Writes back the outcomes of claimed queries in one script call. */
  async apply(writes: readonly DueWrite[]): Promise<void> {
    if (writes.length === 0) return;
    const ops = writes.map((w) => {
      const m = w.query.member;
      if (w.kind === 'end') return { m, k: 'end' };
      if (w.kind === 'retry') return { m, k: 'retry', at: w.at };
      return w.abandon === true ? { m, k: 'later', at: w.at, a: 1 } : { m, k: 'later', at: w.at };
    });
    await APPLY.run(this.#o.redis, [this.key], [this.#o.prefix, JSON.stringify(ops)]);
  }

  /** Holds the partition's leases for `ms` (a 429); an existing longer hold stays. */
  async hold(ms: number, reason: string): Promise<void> {
    await holdDueSet(this.#o.redis, this.#o.holdKey, ms, reason);
  }

  /** How full the set is at `now`. */
  depth(now: number): Promise<DueSetDepth> {
    return dueSetDepth(this.#o.redis, this.key, now);
  }
}
