import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import { LuaScript } from '../queues/lua-script.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { deliveryTraceKey, queryTraceKey } from '../trace/trace-keys.ts';
import { pollSetKey, type PolledRemoteJob } from './poll-set.ts';
import { outboxMember, queryOutboxKey, queryStateKey, type Triggers } from './query-outbox.ts';

export type { Triggers };

/** One record update that asked for a query. */
export interface Trigger {
  eventId: string;
  /** When the update was accepted (ISO 8601). */
  at: string;
}

/** How many event ids a query remembers; a burst of thousands keeps only the newest. */
export const MAX_TRIGGER_IDS = 100;

const SCHEDULE = LuaScript.load(new URL('./lua/schedule-trigger.lua', import.meta.url));
const CLAIM = LuaScript.load(new URL('./lua/claim-query.lua', import.meta.url));
const SUBMITTED = LuaScript.load(new URL('./lua/mark-submitted.lua', import.meta.url));

/** The remote job of a submitted query, as stored by {@link QueryState.markSubmitted}. */
export type RemoteJob = PolledRemoteJob;

export interface QueryStateOptions {
  redis: RedisClient;
  /**
   * A prefix, or the partitions: a (patient, category)'s state, and the due set its new queries
   * go to, are its patient's partition's.
   */
  prefix: KeySpace;
}

/**
 * The coalescing state of each (patient_service_id, ccsr_category): which query is still open
 * for new updates, which was submitted last. Decisions are made here, from Redis, never from a
 * queue job's data, so that a job waiting between polls can neither swallow an update nor be
 * destroyed by one.
 */
export class QueryState {
  readonly #redis: RedisClient;
  readonly #prefix: KeySpace;

  constructor({ redis, prefix }: QueryStateOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  #key(patientServiceId: string, category: string): string {
    return queryStateKey(patientPrefix(this.#prefix, patientServiceId), patientServiceId, category);
  }

  /**
   * Attaches an update to the open query of the key, opening a new one (sequence number `seq`)
   * when none is open; a new query becomes due at `dueAt` (epoch ms). `coalesced` says the update
   * joined a query opened earlier. Ingest does the same inside its one script per message
   * (`UpdateCommitter`); this is for producers that store no record (the bench, tests).
   */
  async schedule(
    patientServiceId: string,
    category: string,
    trigger: Trigger,
    dueAt: number,
  ): Promise<{ seq: number; coalesced: boolean }> {
    const [seq, coalesced] = (await SCHEDULE.run(
      this.#redis,
      [
        this.#key(patientServiceId, category),
        queryOutboxKey(patientPrefix(this.#prefix, patientServiceId)),
      ],
      [trigger.eventId, trigger.at, MAX_TRIGGER_IDS, patientServiceId, category, dueAt],
    )) as [string, number];
    return { seq: Number(seq), coalesced: coalesced === 1 };
  }

  /** Closes query `seq` to new updates; `undefined` for a stale query that was never open. */
  async claim(
    patientServiceId: string,
    category: string,
    seq: number,
  ): Promise<Triggers | undefined> {
    const claimed = (await CLAIM.run(
      this.#redis,
      [this.#key(patientServiceId, category)],
      [seq],
    )) as string | null;
    return claimed === null ? undefined : (JSON.parse(claimed) as Triggers);
  }

  /**
   * Stores query `seq`'s remote job in one step, right as the service answered, takes it out of
   * the due set of new queries and puts its first poll in its partition's due set of polls at
   * `firstPollAt`: from now on older queries of the
   * key are superseded, and this query is never submitted again. With `traceTtlS` (the message
   * trace's retention, seconds; 0: off) its trace notes `submitted_at` and `remote_job_id`, and the remote job's `tp` (its submission's
   * `traceparent`) goes to its result event's trace.
   */
  async markSubmitted(
    patientServiceId: string,
    category: string,
    seq: number,
    remote: RemoteJob,
    firstPollAt: number,
    traceTtlS = 0,
  ): Promise<void> {
    const prefix = patientPrefix(this.#prefix, patientServiceId);
    await SUBMITTED.run(
      this.#redis,
      [
        this.#key(patientServiceId, category),
        pollSetKey(prefix),
        queryOutboxKey(prefix),
        queryTraceKey(prefix, patientServiceId, category, seq),
        deliveryTraceKey(prefix, remote.queryId ?? ''),
      ],
      [
        seq,
        JSON.stringify(remote),
        firstPollAt,
        outboxMember({ patientServiceId, ccsrCategory: category, seq }),
        traceTtlS,
        remote.submittedAt,
      ],
    );
  }

  /** True when a newer query of the key has been submitted. */
  async isSuperseded(patientServiceId: string, category: string, seq: number): Promise<boolean> {
    const submitted = await this.#redis.hget(this.#key(patientServiceId, category), 'submitted');
    return Number(submitted ?? 0) > seq;
  }

  /** Forgets what query `seq` claimed and submitted, once it has ended. */
  async finish(patientServiceId: string, category: string, seq: number): Promise<void> {
    await this.#redis.hdel(
      this.#key(patientServiceId, category),
      `c:${seq}`,
      `s:${seq}`,
      `r:${seq}`,
      `l:${seq}`,
      `f:${seq}`,
      `n:${seq}`,
      `i:${seq}`,
    );
  }
}
