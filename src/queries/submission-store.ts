import { LuaScript } from '../queues/lua-script.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { outboxMember, queryOutboxKey, queryStateKey, type DueQuery } from './query-outbox.ts';
import type { PolledRemoteJob } from './poll-set.ts';
import type { Triggers } from './query-state.ts';
import type { TracedEnd } from './traced-end.ts';

/**
 * The per-query state a submission works on, in Redis: what a job of the partition's
 * `concordance-queries` queue reads when it is processed, and what it writes back. The job itself
 * carries only which query it is (see SubmissionJobData); the coalescing, supersession and
 * follow-up rules read the query's coalescing hash (`qs:<psid>:<category>`), which besides what
 * QueryState keeps holds: `i:<seq>` the query's id (its result event's), `l:<seq>` runs since its
 * last written outcome, `f:<seq>` failed attempts (transient), `n:<seq>` resubmissions (after lost
 * remote jobs), `s:<seq>` a submission begun. All those keys share the partition's hash tag, so
 * this works on Redis Cluster.
 */

/** A query claimed for its submission by {@link SubmissionStore.claim}, with what it needs. */
export interface ClaimedQuery extends DueQuery {
  /** `<psid>|<category>|<seq>` (the member of the outbox and of the poll set). */
  member: string;
  /** When the query became due (epoch ms): its job's `timestamp` plus its delay. */
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
  /** Runs since its last written outcome, this one included (> 1: a worker died with it). */
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
  /**
   * The feed of the message that opened the query, from its trace (`cw_feed_messages_total`);
   * undefined when it has none (the trace off, or opened before it was on).
   */
  feed: string | undefined;
  /**
   * The W3C `traceparent` of the ingest span of the message that opened the query (kept in its
   * trace only when that trace is sampled): the parent of its `cgs.submit` span. Undefined when none.
   */
  traceparent: string | undefined;
}

/** What {@link SubmissionStore.begin} finds for a submission about to be sent. */
export type BeginAnswer =
  { state: 'new' | 'interrupted' } | { state: 'stored'; remote: PolledRemoteJob };

/** What happens to a claimed query that was not submitted, written back by {@link SubmissionStore.apply}. */
export type SubmissionWrite =
  /** Ended (or superseded, stale): forgotten; `end`: how, for its trace. */
  | { kind: 'end'; query: ClaimedQuery; end?: TracedEnd }
  /**
   * A transient failure: one more failed attempt (its job is retried with backoff); `errorCode`
   * (`ERR_*`) is its trace's `last_error`.
   */
  | { kind: 'retry'; query: ClaimedQuery; errorCode?: string }
  /**
   * Processed again later without an attempt counted (held for a rate limit or a refused key,
   * waiting for a birth date); `abandon`: an answer came that created no job (the attempt is over).
   */
  | { kind: 'later'; query: ClaimedQuery; abandon?: boolean };

/** Claims one query for its submission and reads what it needs, in one step. */
const CLAIM = LuaScript.load(new URL('./lua/claim-submission.lua', import.meta.url));

/** Marks submissions begun, or finds the remote job an earlier attempt stored. */
const BEGIN = LuaScript.load(new URL('./lua/begin-submissions.lua', import.meta.url));

/** Writes back the outcomes of claimed queries that were not submitted. */
const APPLY = LuaScript.load(new URL('./lua/apply-due-writes.lua', import.meta.url));

/** One partition's per-query state, as the submission side reads and writes it. */
export class SubmissionStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #outbox: string;
  readonly #traceTtlS: number;

  /**
   * `redis`: a worker connection; `prefix`: the partition's (its hash tag); `traceTtlS`: the
   * message trace's retention in seconds, 0 when it is off (nothing written).
   */
  constructor(redis: RedisClient, prefix: string, traceTtlS = 0) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#outbox = queryOutboxKey(prefix);
    this.#traceTtlS = traceTtlS;
  }

  /**
   * Claims `query` for its submission; a query with no id yet takes `newId`. `undefined` for a
   * stale query (it ended, or its patient was purged): there is nothing to submit. `now` is the
   * claim's time in the query's trace.
   */
  async claim(
    query: DueQuery,
    dueAt: number,
    newId: string,
    now: number = Date.now(),
  ): Promise<ClaimedQuery | undefined> {
    const { patientServiceId, ccsrCategory, seq } = query;
    const flat = (await CLAIM.run(
      this.#redis,
      [queryStateKey(this.#prefix, patientServiceId, ccsrCategory)],
      [this.#prefix, patientServiceId, seq, newId, ccsrCategory, this.#traceTtlS, now],
    )) as (string | number)[];
    if (flat.length === 0) return undefined;
    const text = (i: number) => {
      const v = flat[i];
      return v === undefined || v === '' ? null : String(v);
    };
    const remote = text(2);
    return {
      patientServiceId,
      ccsrCategory,
      seq,
      member: outboxMember(query),
      dueAt,
      triggers: JSON.parse(String(flat[0])) as Triggers,
      submitted: Number(flat[1]),
      remote: remote === null ? undefined : (JSON.parse(remote) as PolledRemoteJob),
      resubmits: Number(flat[3]),
      failures: Number(flat[4]),
      queryId: String(flat[5]),
      leases: Number(flat[6]),
      optedOut: Number(flat[7]) === 1,
      record: {
        version: text(8),
        sealed: text(9),
        clinical: text(10),
        updatedAt: text(11),
      },
      sealedLocalId: text(12),
      feed: text(13) ?? undefined,
      traceparent: text(14) ?? undefined,
    };
  }

  /**
   * Marks the submission of `query` begun (see lua/begin-submissions.lua): 'stored' with the
   * remote job when an earlier attempt of this (re)submission stored one (never submit twice),
   * 'interrupted' when an earlier attempt had begun without storing its answer, else 'new'.
   */
  async begin(query: ClaimedQuery): Promise<BeginAnswer> {
    const [state, remote] = (await BEGIN.run(
      this.#redis,
      [this.#outbox],
      [this.#prefix, JSON.stringify([{ m: query.member, n: query.resubmits }])],
    )) as string[];
    if (state === 'stored') return { state, remote: JSON.parse(String(remote)) as PolledRemoteJob };
    return { state: state === 'interrupted' ? 'interrupted' : 'new' };
  }

  /**
   * Writes back what happened to a claimed query that was not submitted; `now` is the time its
   * trace notes (an end).
   */
  async apply(write: SubmissionWrite, now: number = Date.now()): Promise<void> {
    const m = write.query.member;
    const op = opOf(write, m);
    await APPLY.run(
      this.#redis,
      [this.#outbox],
      [this.#prefix, JSON.stringify([op]), this.#traceTtlS, now],
    );
  }
}

/** The script's op of a write: `o`, `e`, `ev` the end's outcome, error code and event id. */
function opOf(write: SubmissionWrite, m: string): Record<string, string | number> {
  switch (write.kind) {
    case 'later':
      return write.abandon === true ? { m, k: 'later', a: 1 } : { m, k: 'later' };
    case 'retry':
      return write.errorCode === undefined
        ? { m, k: 'retry' }
        : { m, k: 'retry', e: write.errorCode };
    case 'end': {
      const end = write.end;
      if (end === undefined) return { m, k: 'end' };
      return {
        m,
        k: 'end',
        o: end.outcome,
        ...(end.errorCode === undefined ? {} : { e: end.errorCode }),
        ...(end.eventId === undefined ? {} : { ev: end.eventId }),
      };
    }
  }
}
