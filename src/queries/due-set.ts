import type { RedisClient } from '../queues/redis-client.ts';

/** How full a due set (of new queries, of polls) is at `now`. */
export interface DueSetDepth {
  size: number;
  /** Members whose time has come (a backlog when it grows). */
  due: number;
  /** The time of the oldest due member (epoch ms), null when none is due. */
  oldestDueAt: number | null;
}

/** Reads the depth of the sorted set `key` (scores are due times, epoch ms). */
export async function dueSetDepth(
  redis: RedisClient,
  key: string,
  now: number,
): Promise<DueSetDepth> {
  const [size, due, oldest] = await Promise.all([
    redis.zcard(key),
    redis.zcount(key, '-inf', now),
    redis.zrangebyscore(key, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1),
  ]);
  return { size, due, oldestDueAt: oldest[1] === undefined ? null : Number(oldest[1]) };
}

/**
 * Sets the hold `key` (a string that expires with the hold) for `ms`; an existing longer hold
 * stays. The lease scripts lease nothing while it exists.
 */
export async function holdDueSet(
  redis: RedisClient,
  key: string,
  ms: number,
  reason: string,
): Promise<void> {
  const current = await redis.pttl(key);
  if (current >= ms) return;
  await redis.set(key, reason, 'PX', Math.max(1, Math.round(ms)));
}
