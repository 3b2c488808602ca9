import type { RedisClient } from '../queues/redis-client.ts';
import { LuaScript } from '../queues/lua-script.ts';
import { dueSetDepth, holdDueSet, LUA_FOR_EACH_OP_END, type DueSetDepth } from './due-set.ts';
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

/** What happens to a leased poll, written back by {@link PollSet.apply}. */
export type PollWrite =
  /** Poll again at `at`, with the remote job's updated state. */
  | { kind: 'again'; poll: LeasedPoll; at: number; remote: PolledRemoteJob }
  /** The query ended: forget its claim, submission and remote job; learn its latency. */
  | { kind: 'end'; poll: LeasedPoll; latencyMs?: number }
  /** The query goes back to submission (its poll leaves the set), due at `at`, `resubmits` after. */
  | { kind: 'resubmit'; poll: LeasedPoll; at: number; resubmits: number }
  /** Held (429, refused key): due again at `at`, lease count reset. */
  | { kind: 'hold'; poll: LeasedPoll; at: number };

/**
 * Leases up to ARGV[2] polls due by ARGV[1] (moving their score to the lease's end, ARGV[3]) and
 * reads each one's state, unless the partition is held (KEYS[2], a rate limit) or paused (KEYS[3],
 * a refused API key). A member whose remote job is gone (ended, purged) is dropped.
 * Returns a flat list: member, due score, submitted, remote job JSON, triggers JSON, leases.
 */
const LEASE = new LuaScript(`
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return {} end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i = 1, #due, 2 do
  local member = due[i]
  local psid, cat, seq = string.match(member, '^(.*)|([^|]*)|(%d+)$')
  local qs = ARGV[4] .. ':qs:' .. (psid or '') .. ':' .. (cat or '')
  local f = psid and redis.call('HMGET', qs, 'submitted', 'r:' .. seq, 'c:' .. seq) or {}
  if not f[2] then
    redis.call('ZREM', KEYS[1], member)
  else
    redis.call('ZADD', KEYS[1], 'XX', ARGV[3], member)
    local leases = redis.call('HINCRBY', qs, 'l:' .. seq, 1)
    out[#out + 1] = member
    out[#out + 1] = due[i + 1]
    out[#out + 1] = f[1] or '0'
    out[#out + 1] = f[2]
    out[#out + 1] = f[3] or ''
    out[#out + 1] = leases
  end
end
return out
`);

/**
 * Writes a batch of outcomes (ARGV[2], JSON [{m, k, at?, r?, lat?, n?}]) of polls leased under
 * prefix ARGV[1]; a resubmitted query goes back to the due set of new queries (KEYS[2]). A poll
 * whose remote job is gone meanwhile (a purge) is not brought back.
 */
const APPLY = new LuaScript(`${LUA_FOR_EACH_OP_END}
    if op.lat then
      local lk = ARGV[1] .. ':qlat:' .. cat
      redis.call('LPUSH', lk, op.lat)
      redis.call('LTRIM', lk, 0, tonumber(ARGV[3]) - 1)
    end
  elseif op.k == 'resubmit' then
    redis.call('ZREM', KEYS[1], op.m)
    redis.call('HDEL', qs, 'l:' .. seq)
    redis.call('HSET', qs, 'n:' .. seq, op.n)
    redis.call('ZADD', KEYS[2], op.at, op.m)
  elseif redis.call('HEXISTS', qs, 'r:' .. seq) == 1 then
    if op.r then redis.call('HSET', qs, 'r:' .. seq, op.r) end
    redis.call('HDEL', qs, 'l:' .. seq)
    redis.call('ZADD', KEYS[1], 'XX', op.at, op.m)
  else
    redis.call('ZREM', KEYS[1], op.m)
  end
end
return #ops
`);

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
    const ops = writes.map((w) => {
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
    });
    await APPLY.run(
      this.#o.redis,
      [this.key, queryOutboxKey(this.#o.prefix)],
      [this.#o.prefix, JSON.stringify(ops), this.#o.latencyWindow ?? 64],
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

/** The poll set member of a query. */
export function pollMember(query: DueQuery): string {
  return outboxMember(query);
}
