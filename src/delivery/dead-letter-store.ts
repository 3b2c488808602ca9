import type { ChainableCommander, Redis } from 'ioredis';
import { DeadLetterSchema, type DeadLetter } from './dead-letter.ts';

/** Drops letters past their retention from all three keys at once. */
const PRUNE = `
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
for _, id in ipairs(expired) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
end
return #expired
`;

export interface DeadLetterStoreOptions {
  redis: Redis;
  prefix: string;
  /** How long a letter is kept (`delivery.dead_letters.retention_days`). @defaultValue 30 */
  retentionDays?: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

export interface DeadLetterFilter {
  /** Only events created at or after this time. */
  since?: Date;
  /** Only events of this CCSR category. */
  category?: string;
}

const DAY_MS = 86_400_000;

/**
 * Result events a channel gave up on, with their last error, kept for a retention period so that
 * an operator can re-drive them (`replay`). Three keys: the letters by event id (a hash), an index
 * by event time (so that replay keeps the order events were made in), and one by expiry (a
 * letter's retention counts from when it was dead-lettered, not from the event).
 */
export class DeadLetterStore {
  readonly #redis: Redis;
  readonly #records: string;
  readonly #byTime: string;
  readonly #expiry: string;
  readonly #retentionMs: number;
  readonly #now: () => number;

  constructor({ redis, prefix, retentionDays = 30, now = Date.now }: DeadLetterStoreOptions) {
    this.#redis = redis;
    this.#records = `${prefix}:dead-letters:records`;
    this.#byTime = `${prefix}:dead-letters:by-time`;
    this.#expiry = `${prefix}:dead-letters:expiry`;
    this.#retentionMs = retentionDays * DAY_MS;
    this.#now = now;
  }

  /**
   * Adds the commands that store `letter` to a MULTI, so that a caller can make the letter appear
   * in the same step as its own change (the delivery leaving its queue). Adding the same event
   * again replaces its letter.
   */
  stage(multi: ChainableCommander, letter: DeadLetter): ChainableCommander {
    const id = letter.event.id;
    return multi
      .hset(this.#records, id, JSON.stringify(DeadLetterSchema.parse(letter)))
      .zadd(this.#byTime, Date.parse(letter.event.created_at), id)
      .zadd(this.#expiry, this.#now() + this.#retentionMs, id);
  }

  async add(letter: DeadLetter): Promise<void> {
    await this.stage(this.#redis.multi(), letter).exec();
  }

  /** Adds the commands that remove `id` to a MULTI (see {@link stage}). */
  stageRemove(multi: ChainableCommander, id: string): ChainableCommander {
    return multi.hdel(this.#records, id).zrem(this.#byTime, id).zrem(this.#expiry, id);
  }

  /** True when there was such a letter. */
  async remove(id: string): Promise<boolean> {
    const results = await this.stageRemove(this.#redis.multi(), id).exec();
    return results?.[0]?.[1] === 1;
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    await this.#prune();
    const raw = await this.#redis.hget(this.#records, id);
    return raw === null ? undefined : DeadLetterSchema.parse(JSON.parse(raw));
  }

  /** The letters kept, oldest event first. */
  async list(filter: DeadLetterFilter = {}): Promise<DeadLetter[]> {
    await this.#prune();
    const min = filter.since === undefined ? '-inf' : String(filter.since.getTime());
    const ids = await this.#redis.zrangebyscore(this.#byTime, min, '+inf');
    const letters: DeadLetter[] = [];
    // In pages, so that a large backlog does not become one huge reply.
    for (let i = 0; i < ids.length; i += 500) {
      const page = ids.slice(i, i + 500);
      const raws = await this.#redis.hmget(this.#records, ...page);
      for (const raw of raws) {
        if (raw === null) continue;
        const letter = DeadLetterSchema.parse(JSON.parse(raw));
        if (filter.category === undefined || letter.event.ccsr_category === filter.category) {
          letters.push(letter);
        }
      }
    }
    return letters;
  }

  async count(): Promise<number> {
    await this.#prune();
    return this.#redis.hlen(this.#records);
  }

  async #prune(): Promise<void> {
    await this.#redis.eval(PRUNE, 3, this.#records, this.#byTime, this.#expiry, this.#now());
  }
}
