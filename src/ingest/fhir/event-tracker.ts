import { createHash } from 'node:crypto';
import { LuaScript } from '../../queues/lua-script.ts';
import type { RedisClient } from '../../queues/redis-client.ts';

const ADVANCE = LuaScript.load(new URL('./lua/advance-event.lua', import.meta.url));

/** A short, stable name of a subscription for keys and logs. */
export function subscriptionHash(subscription: string): string {
  return createHash('sha256').update(subscription).digest('hex').slice(0, 16);
}

/**
 * Per subscription, in Redis: the highest event number processed, the last heartbeat and the last
 * status the server reported. Event numbers rise by one per event, so a notification whose number
 * is beyond the next one expected means that notifications were missed.
 */
export class EventTracker {
  readonly #redis: RedisClient;
  readonly #prefix: string;

  constructor(options: { redis: RedisClient; prefix: string }) {
    this.#redis = options.redis;
    this.#prefix = options.prefix;
  }

  #key(subscription: string): string {
    return `${this.#prefix}:fhirsub:${subscriptionHash(subscription)}`;
  }

  /** The highest event number processed, if any was. */
  async lastEvent(subscription: string): Promise<number | undefined> {
    const value = await this.#redis.hget(this.#key(subscription), 'last_event');
    return value === null ? undefined : Number(value);
  }

  /** Records that every event up to `eventNumber` is processed (never lowers it). */
  async advance(subscription: string, eventNumber: number): Promise<void> {
    await ADVANCE.run(this.#redis, [this.#key(subscription)], [eventNumber]);
  }

  /** A handshake's count starts the sequence, unless events were already processed. */
  async baseline(subscription: string, eventsSinceStart: number): Promise<void> {
    await this.#redis.hsetnx(this.#key(subscription), 'last_event', eventsSinceStart);
  }

  async heartbeat(subscription: string, at: Date, status: string | undefined): Promise<void> {
    await this.#redis.hset(this.#key(subscription), {
      last_heartbeat: at.toISOString(),
      ...(status === undefined ? {} : { last_status: status }),
    });
  }

  async lastHeartbeat(subscription: string): Promise<string | undefined> {
    return (await this.#redis.hget(this.#key(subscription), 'last_heartbeat')) ?? undefined;
  }
}
