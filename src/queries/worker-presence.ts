import type { RedisClient } from '../queues/redis-client.ts';

/** How often a running query worker marks its presence. */
export const PRESENCE_BEAT_MS = 5_000;

/** A presence older than this is a worker that is gone (three beats missed). */
export const PRESENCE_STALE_MS = 3 * PRESENCE_BEAT_MS;

/** The sorted set of the query workers of a partition (member: a worker, score: its last beat). */
export function presenceKey(prefix: string): string {
  return `${prefix}:qworkers`;
}

/**
 * The query workers serving a partition, as `redis repartition` needs to know them (BullMQ's
 * worker count no longer sees them: the queries run without a BullMQ worker). Each worker beats
 * every {@link PRESENCE_BEAT_MS}; one that stopped leaves, one that died fades after
 * {@link PRESENCE_STALE_MS}.
 */
export class WorkerPresence {
  readonly #redis: RedisClient;
  readonly #key: string;
  readonly #id: string;

  constructor(options: { redis: RedisClient; prefix: string; id?: string }) {
    this.#redis = options.redis;
    this.#key = presenceKey(options.prefix);
    this.#id = options.id ?? `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  }

  async beat(now = Date.now()): Promise<void> {
    await this.#redis.zadd(this.#key, now, this.#id);
    await this.#redis.zremrangebyscore(this.#key, '-inf', now - PRESENCE_STALE_MS);
  }

  async leave(): Promise<void> {
    await this.#redis.zrem(this.#key, this.#id);
  }
}

/** How many query workers serve the partition of `prefix` now. */
export async function workersPresent(
  redis: RedisClient,
  prefix: string,
  now = Date.now(),
): Promise<number> {
  return redis.zcount(presenceKey(prefix), now - PRESENCE_STALE_MS, '+inf');
}
