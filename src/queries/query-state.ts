import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import { LuaScript } from '../queues/lua-script.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { pollSetKey, type PolledRemoteJob } from './poll-set.ts';
import {
  outboxMember,
  queryOutboxKey,
  queryStateKey,
  SCHEDULE_QUERY_LUA,
  type Triggers,
} from './query-outbox.ts';

export type { Triggers };

/** One record update that asked for a query. */
export interface Trigger {
  eventId: string;
  /** When the update was accepted (ISO 8601). */
  at: string;
}

/** How many event ids a query remembers; a burst of thousands keeps only the newest. */
export const MAX_TRIGGER_IDS = 100;

/**
 * Adds a trigger to the key's open (not yet submitted) query, opening one if there is none, and
 * puts a newly opened query in the due set (see query-outbox.ts).
 */
const SCHEDULE = new LuaScript(`${SCHEDULE_QUERY_LUA}
local seq, coalesced = schedule_query(KEYS[1], KEYS[2], ARGV[4], ARGV[5], ARGV[1], ARGV[2], ARGV[6], tonumber(ARGV[3]))
return {seq, coalesced}
`);

/**
 * Closes the open query `seq` for new triggers and hands them over. Idempotent: a worker that
 * died after claiming gets the same answer again. Returns nothing for a query that is not open
 * and was never claimed (a stale job).
 */
const CLAIM = new LuaScript(`
local claimed = redis.call('HGET', KEYS[1], 'c:' .. ARGV[1])
if claimed then return claimed end
if redis.call('HGET', KEYS[1], 'pending') ~= ARGV[1] then return false end
local t = redis.call('HMGET', KEYS[1], 'p_events', 'p_count', 'p_first_at', 'p_last_at')
claimed = cjson.encode({eventIds = cjson.decode(t[1]), count = tonumber(t[2]), firstAt = t[3], lastAt = t[4]})
redis.call('HDEL', KEYS[1], 'pending', 'p_events', 'p_count', 'p_first_at', 'p_last_at')
redis.call('HSET', KEYS[1], 'c:' .. ARGV[1], claimed)
return claimed
`);

/**
 * Records that query `seq` has a remote job (ARGV[2], a JSON {@link RemoteJob}) in the same step
 * that learnt it; newer submitted queries supersede older ones.
 */
const SUBMITTED = new LuaScript(`
local current = tonumber(redis.call('HGET', KEYS[1], 'submitted') or '0')
if tonumber(ARGV[1]) > current then redis.call('HSET', KEYS[1], 'submitted', ARGV[1]) end
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[1], 's:' .. ARGV[1], 'l:' .. ARGV[1], 'f:' .. ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZREM', KEYS[3], ARGV[4])
return current
`);

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
   * key are superseded, and this query is never submitted again.
   */
  async markSubmitted(
    patientServiceId: string,
    category: string,
    seq: number,
    remote: RemoteJob,
    firstPollAt: number,
  ): Promise<void> {
    const prefix = patientPrefix(this.#prefix, patientServiceId);
    await SUBMITTED.run(
      this.#redis,
      [this.#key(patientServiceId, category), pollSetKey(prefix), queryOutboxKey(prefix)],
      [
        seq,
        JSON.stringify(remote),
        firstPollAt,
        outboxMember({ patientServiceId, ccsrCategory: category, seq }),
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
