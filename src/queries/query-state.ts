import type { Redis } from 'ioredis';

/** One record update that asked for a query. */
export interface Trigger {
  eventId: string;
  /** When the update was accepted (ISO 8601). */
  at: string;
}

/** What a query was triggered by: the newest event ids (capped), their count and time span. */
export interface Triggers {
  eventIds: string[];
  count: number;
  firstAt: string;
  lastAt: string;
}

/** How many event ids a query remembers; a burst of thousands keeps only the newest. */
export const MAX_TRIGGER_IDS = 100;

/**
 * Adds a trigger to the key's open (not yet submitted) query, opening one if there is none.
 * Everything lives in the key's own hash, so the script touches only a declared key.
 */
const SCHEDULE = `
local pending = redis.call('HGET', KEYS[1], 'pending')
local coalesced = 1
if not pending then
  local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
  pending = tostring(seq)
  redis.call('HSET', KEYS[1], 'pending', pending, 'p_first_at', ARGV[2], 'p_count', 0, 'p_events', '[]')
  coalesced = 0
end
local events = cjson.decode(redis.call('HGET', KEYS[1], 'p_events'))
table.insert(events, ARGV[1])
if #events > tonumber(ARGV[3]) then table.remove(events, 1) end
redis.call('HSET', KEYS[1], 'p_events', cjson.encode(events), 'p_last_at', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'p_count', 1)
return {pending, coalesced}
`;

/**
 * Closes the open query `seq` for new triggers and hands them over. Idempotent: a worker that
 * died after claiming gets the same answer again. Returns nothing for a query that is not open
 * and was never claimed (a stale job).
 */
const CLAIM = `
local claimed = redis.call('HGET', KEYS[1], 'c:' .. ARGV[1])
if claimed then return claimed end
if redis.call('HGET', KEYS[1], 'pending') ~= ARGV[1] then return false end
local t = redis.call('HMGET', KEYS[1], 'p_events', 'p_count', 'p_first_at', 'p_last_at')
claimed = cjson.encode({eventIds = cjson.decode(t[1]), count = tonumber(t[2]), firstAt = t[3], lastAt = t[4]})
redis.call('HDEL', KEYS[1], 'pending', 'p_events', 'p_count', 'p_first_at', 'p_last_at')
redis.call('HSET', KEYS[1], 'c:' .. ARGV[1], claimed)
return claimed
`;

/** Records that query `seq` has a remote job; newer submitted queries supersede older ones. */
const SUBMITTED = `
local current = tonumber(redis.call('HGET', KEYS[1], 'submitted') or '0')
if tonumber(ARGV[1]) > current then redis.call('HSET', KEYS[1], 'submitted', ARGV[1]) end
return current
`;

export interface QueryStateOptions {
  redis: Redis;
  prefix: string;
}

/**
 * The coalescing state of each (patient_service_id, ccsr_category): which query is still open
 * for new updates, which was submitted last. Decisions are made here, from Redis, never from a
 * queue job's data, so that a job waiting between polls can neither swallow an update nor be
 * destroyed by one.
 */
export class QueryState {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor({ redis, prefix }: QueryStateOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  #key(patientServiceId: string, category: string): string {
    return `${this.#prefix}:qs:${patientServiceId}:${category}`;
  }

  /**
   * Attaches an update to the open query of the key, opening a new one (sequence number `seq`)
   * when none is open. `coalesced` says the update joined a query opened earlier.
   */
  async schedule(
    patientServiceId: string,
    category: string,
    trigger: Trigger,
  ): Promise<{ seq: number; coalesced: boolean }> {
    const [seq, coalesced] = (await this.#redis.eval(
      SCHEDULE,
      1,
      this.#key(patientServiceId, category),
      trigger.eventId,
      trigger.at,
      MAX_TRIGGER_IDS,
    )) as [string, number];
    return { seq: Number(seq), coalesced: coalesced === 1 };
  }

  /** Closes query `seq` to new updates; `undefined` for a stale query that was never open. */
  async claim(
    patientServiceId: string,
    category: string,
    seq: number,
  ): Promise<Triggers | undefined> {
    const claimed = (await this.#redis.eval(
      CLAIM,
      1,
      this.#key(patientServiceId, category),
      seq,
    )) as string | null;
    return claimed === null ? undefined : (JSON.parse(claimed) as Triggers);
  }

  /** Marks query `seq` submitted; from now on older queries of the key are superseded. */
  async markSubmitted(patientServiceId: string, category: string, seq: number): Promise<void> {
    await this.#redis.eval(SUBMITTED, 1, this.#key(patientServiceId, category), seq);
  }

  /** True when a newer query of the key has been submitted. */
  async isSuperseded(patientServiceId: string, category: string, seq: number): Promise<boolean> {
    const submitted = await this.#redis.hget(this.#key(patientServiceId, category), 'submitted');
    return Number(submitted ?? 0) > seq;
  }

  /** Forgets what query `seq` claimed, once it has ended. */
  async finish(patientServiceId: string, category: string, seq: number): Promise<void> {
    await this.#redis.hdel(this.#key(patientServiceId, category), `c:${seq}`);
  }
}
