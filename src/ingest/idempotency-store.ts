import { createHash } from 'node:crypto';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';

export interface IdempotencyStoreOptions {
  redis: RedisClient;
  /**
   * Key prefix, with a hash tag (`{cw}`) so that a patient's keys share a Redis Cluster slot; or
   * the partitions (an event id is remembered in its patient's partition).
   */
  prefix: KeySpace;
  /**
   * How long an event id is remembered (`config.ingest.idempotency_ttl_s`).
   * @defaultValue 86400
   */
  ttlSeconds?: number;
}

/**
 * The event ids of accepted record updates, per patient (the same id from two patients is two
 * updates), each with the answer it got, for `ttlSeconds`. Ingest writes an entry in the same
 * script that stores the update (`UpdateCommitter`), so an id is remembered exactly when its update
 * is durable.
 */
export class IdempotencyStore {
  readonly #redis: RedisClient;
  readonly #prefix: KeySpace;
  readonly #ttlSeconds: number;

  constructor({ redis, prefix, ttlSeconds = 86_400 }: IdempotencyStoreOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#ttlSeconds = ttlSeconds;
  }

  /**
   * The key of an event id of a patient. The event id is hashed: it is the sender's free text (up to 200 characters, any bytes), and a
   * digest keeps key names short, uniform and free of whatever the sender put in it.
   */
  keyOf(patientServiceId: string, eventId: string): string {
    const digest = createHash('sha256')
      .update(patientServiceId, 'utf8')
      .update('\0')
      .update(eventId, 'utf8')
      .digest('base64url');
    return `${patientPrefix(this.#prefix, patientServiceId)}:idem:${digest}`;
  }

  /** How long an entry is kept, in seconds. */
  get ttlSeconds(): number {
    return this.#ttlSeconds;
  }

  /** The answer stored for an event id of this patient seen within the window, or `undefined`. */
  async find(patientServiceId: string, eventId: string): Promise<unknown> {
    const stored = await this.#redis.get(this.keyOf(patientServiceId, eventId));
    return stored === null ? undefined : (JSON.parse(stored) as unknown);
  }

  /**
   * Remembers the event id with its answer unless it is remembered already (SET NX EX); true when
   * this call stored it.
   */
  async remember(patientServiceId: string, eventId: string, answer: unknown): Promise<boolean> {
    const set = await this.#redis.set(
      this.keyOf(patientServiceId, eventId),
      JSON.stringify(answer),
      'EX',
      this.#ttlSeconds,
      'NX',
    );
    return set === 'OK';
  }
}
