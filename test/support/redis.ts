import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { inject } from 'vitest';

/** The Redis the global setup chose for this run. */
export function testRedisUrl(): string {
  return inject('redisUrl');
}

/**
 * A key prefix of this test's own (`{cwtest-…}`, a hash tag as in production), and a connection
 * that deletes everything under it when the test is done.
 */
export async function isolatedRedis(): Promise<{
  prefix: string;
  redis: Redis;
  cleanup(): Promise<void>;
}> {
  const prefix = `{cwtest-${randomUUID()}}`;
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  return {
    prefix,
    redis,
    async cleanup() {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) await redis.unlink(...keys);
      } while (cursor !== '0');
      await redis.quit();
    },
  };
}
