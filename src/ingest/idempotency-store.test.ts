import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { IdempotencyStore } from './idempotency-store.ts';

describe('IdempotencyStore (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let store: IdempotencyStore;

  beforeEach(async () => {
    env = await isolatedRedis();
    store = new IdempotencyStore({ redis: env.redis, prefix: env.prefix, ttlSeconds: 120 });
  });
  afterEach(() => env.cleanup());

  it('remembers an event id once, with its first answer', async () => {
    expect(await store.find('p1', 'evt-1')).toBeUndefined();
    expect(await store.remember('p1', 'evt-1', { n: 1 })).toBe(true);
    expect(await store.remember('p1', 'evt-1', { n: 2 })).toBe(false);
    expect(await store.find('p1', 'evt-1')).toEqual({ n: 1 });
    expect(await store.find('p1', 'evt-2')).toBeUndefined();
  });

  it('keeps the event ids of two patients apart', async () => {
    expect(await store.remember('p1', 'evt-1', { n: 1 })).toBe(true);
    expect(await store.find('p2', 'evt-1')).toBeUndefined();
    expect(await store.remember('p2', 'evt-1', { n: 2 })).toBe(true);
    expect(await store.find('p2', 'evt-1')).toEqual({ n: 2 });
  });

  it('expires entries after the configured window and keeps the event id out of key names', async () => {
    await store.remember('p1', 'EVENT WITH SPACES', { ok: true });
    const keys = await env.redis.keys(`${env.prefix}:idem:*`);
    expect(keys).toHaveLength(1);
    const [key] = keys as [string];
    expect(key).not.toContain('EVENT');
    const ttl = await env.redis.ttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(120);
  });
});
