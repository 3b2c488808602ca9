import type { Cluster, Redis } from 'ioredis';

/**
 * A connection to Redis: one server (`Redis`) or a Redis Cluster (`Cluster`, when
 * `REDIS_CLUSTER_NODES` is set). Both take the same commands; what differs is handled here:
 * a `SCAN` must walk every master of a cluster (see {@link scanKeys}).
 */
export type RedisClient = Redis | Cluster;

/** The servers a key scan must walk: each master of a cluster, or the one server. */
export function scanTargets(redis: RedisClient): Redis[] {
  return redis.isCluster ? (redis as Cluster).nodes('master') : [redis as Redis];
}

/** `value` with the glob characters of Redis `SCAN MATCH` escaped, for a literal match. */
export function globLiteral(value: string): string {
  return value.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * Every key matching `pattern` (of `type`, when given), walked with a SCAN cursor on each server
 * (never KEYS), in pages of `count` hints.
 */
export async function* scanEach(
  redis: RedisClient,
  pattern: string,
  options: { type?: string; count?: number } = {},
): AsyncGenerator<string[]> {
  const count = options.count ?? 1_000;
  for (const server of scanTargets(redis)) {
    let cursor = '0';
    do {
      const [next, keys] =
        options.type === undefined
          ? await server.scan(cursor, 'MATCH', pattern, 'COUNT', count)
          : await server.scan(cursor, 'MATCH', pattern, 'COUNT', count, 'TYPE', options.type);
      cursor = next;
      if (keys.length > 0) yield keys;
    } while (cursor !== '0');
  }
}

/** Every key matching `pattern`, on every server (see {@link scanEach}). */
export async function scanKeys(
  redis: RedisClient,
  pattern: string,
  options: { type?: string } = {},
): Promise<string[]> {
  const found = new Set<string>();
  for await (const keys of scanEach(redis, pattern, options))
    for (const key of keys) found.add(key);
  return [...found];
}
