import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface IdempotencyStoreOptions {
  redis: Redis;
  /** Key prefix, with a hash tag (`{cw}`) so that all keys share a Redis Cluster slot. */
  prefix: string;
  /**
   * How long an event id is remembered (`config.ingest.idempotency_ttl_s`).
   * @defaultValue 86400
   */
  ttlSeconds?: number;
}

/**
 * The event ids of accepted record updates, each with the answer it got, for `ttlSeconds`.
 * The caller writes an entry only once everything the update caused is durable, so that an update
 * interrupted half-way (a crash, Redis lost) is not remembered and the sender's retry goes through.
 */
export class IdempotencyStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #ttlSeconds: number;

  constructor({ redis, prefix, ttlSeconds = 86_400 }: IdempotencyStoreOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#ttlSeconds = ttlSeconds;
  }

  /**
   * The event id is hashed: it is the sender's free text (up to 200 characters, any bytes), and a
   * digest keeps key names short, uniform and free of whatever the sender put in it.
   */
  #key(eventId: string): string {
    const digest = createHash('sha256').update(eventId, 'utf8').digest('base64url');
    return `${this.#prefix}:idem:${digest}`;
  }

  /** The answer stored for an event id seen within the window, or `undefined`. */
  async find(eventId: string): Promise<unknown> {
    const stored = await this.#redis.get(this.#key(eventId));
    return stored === null ? undefined : (JSON.parse(stored) as unknown);
  }

  /**
   * Remembers the event id with its answer unless it is remembered already (SET NX EX); true when
   * this call stored it.
   */
  async remember(eventId: string, answer: unknown): Promise<boolean> {
    const set = await this.#redis.set(
      this.#key(eventId),
      JSON.stringify(answer),
      'EX',
      this.#ttlSeconds,
      'NX',
    );
    return set === 'OK';
  }
}
