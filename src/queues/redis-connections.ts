import { Redis, type RedisOptions } from 'ioredis';

/**
 * A connection for BullMQ workers and blocking commands: it waits for Redis to come back rather
 * than failing commands (BullMQ requires `maxRetriesPerRequest: null` here).
 */
export function workerConnection(url: string, name: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, connectionName: name });
}

/**
 * A connection for request paths (ingest): commands fail fast while Redis is unreachable, so a
 * request can be answered 503 instead of hanging.
 */
export function requestConnection(url: string, name: string, extra: RedisOptions = {}): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    connectionName: name,
    ...extra,
  });
}

/** True when Redis answers PING within `timeoutMs` (a worker connection would otherwise wait). */
export async function redisAnswers(redis: Redis, timeoutMs = 1_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([redis.ping().then((answer) => answer === 'PONG'), late]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
