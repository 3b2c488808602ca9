import type { ChainableCommander } from 'ioredis';
import { LuaScript } from '../queues/lua-script.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { z } from 'zod';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import {
  DeadLetterSchema,
  DeadLetterSummarySchema,
  type DeadLetter,
  type DeadLetterSummary,
} from './dead-letter.ts';
import { openStoredEvent, sealStoredEvent } from './stored-event.ts';

/** A letter as kept in Redis: its event's `patient_id` sealed (see `stored-event.ts`). */
const KeptLetterSchema = DeadLetterSchema.extend({ event: z.unknown() });

/** Drops letters past their retention from all three keys at once. */
const PRUNE = LuaScript.load(new URL('./lua/prune-dead-letters.lua', import.meta.url));

export interface DeadLetterStoreOptions {
  redis: RedisClient;
  prefix: string;
  /**
   * Seal each letter's `patient_id` at rest. Only counting and removing work without them (the
   * status command). @defaultValue none
   */
  keys?: CrosswalkKeys;
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

const summaryOf = (raw: string): DeadLetterSummary =>
  DeadLetterSummarySchema.parse(JSON.parse(raw));

/**
 * Result events a channel gave up on, with their last error, kept for a retention period so that
 * an operator can re-drive them (`replay`). Three keys: the letters by event id (a hash), an index
 * by event time (so that replay keeps the order events were made in), and one by expiry (a
 * letter's retention counts from when it was dead-lettered, not from the event).
 */
export class DeadLetterStore {
  readonly #redis: RedisClient;
  readonly #records: string;
  readonly #byTime: string;
  readonly #expiry: string;
  readonly #retentionMs: number;
  readonly #now: () => number;
  readonly #keys: CrosswalkKeys | undefined;

  constructor({ redis, prefix, keys, retentionDays = 30, now = Date.now }: DeadLetterStoreOptions) {
    this.#redis = redis;
    this.#keys = keys;
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
      .hset(this.#records, id, this.#seal(letter))
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
    return raw === null ? undefined : this.#open(raw);
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
        const letter = this.#open(raw);
        if (filter.category === undefined || letter.event.ccsr_category === filter.category) {
          letters.push(letter);
        }
      }
    }
    return letters;
  }

  /**
   * Letters `start` to `end` (0-based, inclusive), newest event first, as summaries: read without
   * the crosswalk keys and never opened, so that they name no patient (the queue view).
   */
  async summaries(start: number, end: number): Promise<DeadLetterSummary[]> {
    await this.#prune();
    const ids = await this.#redis.zrevrange(this.#byTime, start, end);
    if (ids.length === 0) return [];
    const raws = await this.#redis.hmget(this.#records, ...ids);
    return raws.flatMap((raw) => (raw === null ? [] : [summaryOf(raw)]));
  }

  /** One letter as a summary (see {@link summaries}). */
  async summary(id: string): Promise<DeadLetterSummary | undefined> {
    await this.#prune();
    const raw = await this.#redis.hget(this.#records, id);
    return raw === null ? undefined : summaryOf(raw);
  }

  /** Removes every letter of a patient; returns how many. */
  async purgePatient(patientServiceId: string): Promise<number> {
    const ids: string[] = [];
    let cursor = '0';
    do {
      const [next, entries] = await this.#redis.hscan(this.#records, cursor, 'COUNT', 500);
      cursor = next;
      for (let i = 0; i + 1 < entries.length; i += 2) {
        // The service id rests in clear (it identifies no one outside this pipeline).
        const kept = KeptLetterSchema.parse(JSON.parse(entries[i + 1] ?? ''));
        const event = kept.event as { patient_service_id?: unknown };
        if (event.patient_service_id === patientServiceId) ids.push(entries[i] ?? '');
      }
    } while (cursor !== '0');
    for (const id of ids) await this.remove(id);
    return ids.length;
  }

  async count(): Promise<number> {
    await this.#prune();
    return this.#redis.hlen(this.#records);
  }

  get #sealing(): CrosswalkKeys {
    if (this.#keys === undefined)
      throw new Error('dead letters are sealed: pass the crosswalk keys');
    return this.#keys;
  }

  #seal(letter: DeadLetter): string {
    const checked = DeadLetterSchema.parse(letter);
    return JSON.stringify({ ...checked, event: sealStoredEvent(checked.event, this.#sealing) });
  }

  #open(raw: string): DeadLetter {
    const kept = KeptLetterSchema.parse(JSON.parse(raw));
    return { ...kept, event: openStoredEvent(kept.event, this.#sealing) };
  }

  async #prune(): Promise<void> {
    await PRUNE.run(this.#redis, [this.#records, this.#byTime, this.#expiry], [this.#now()]);
  }
}
