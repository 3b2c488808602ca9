import { describe, expect, it } from 'vitest';
import { isolatedRedis, testRedisUrl } from './redis.ts';

describe('test Redis', () => {
  it('answers and isolates each test under its own prefix, removed on cleanup', async () => {
    const a = await isolatedRedis();
    const b = await isolatedRedis();
    expect(a.prefix).not.toBe(b.prefix);
    await a.redis.set(`${a.prefix}:k`, '1');
    await b.redis.set(`${b.prefix}:k`, '2');
    await a.cleanup();
    expect(await b.redis.exists(`${a.prefix}:k`)).toBe(0);
    expect(await b.redis.get(`${b.prefix}:k`)).toBe('2');
    await b.cleanup();
    expect(testRedisUrl()).toMatch(/^redis:\/\//);
  });
});
