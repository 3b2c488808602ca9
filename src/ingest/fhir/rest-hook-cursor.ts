import type { RedisClient } from '../../queues/redis-client.ts';

/**
 * Per classic rest-hook subscription, in Redis: when its criteria were last read, so that the
 * next ping reads only what changed since (less an overlap; re-reading is harmless).
 */
export class RestHookCursor {
  readonly #redis: RedisClient;
  readonly #prefix: string;

  constructor(options: { redis: RedisClient; prefix: string }) {
    this.#redis = options.redis;
    this.#prefix = options.prefix;
  }

  #key(name: string): string {
    return `${this.#prefix}:fhirhook:${name}`;
  }

  /** The moment of the last completed read, if any. */
  async lastRead(name: string): Promise<Date | undefined> {
    const value = await this.#redis.hget(this.#key(name), 'last_read');
    return value === null ? undefined : new Date(value);
  }

  /** Records a completed read that started at `at` (never moves back). */
  async advance(name: string, at: Date): Promise<void> {
    const prior = await this.lastRead(name);
    if (prior !== undefined && prior >= at) return;
    await this.#redis.hset(this.#key(name), 'last_read', at.toISOString());
  }
}
