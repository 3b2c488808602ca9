import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from './redis.ts';
import { scanRedisFor } from './scan-redis.ts';

let redis: Awaited<ReturnType<typeof isolatedRedis>>;
beforeEach(async () => {
  redis = await isolatedRedis();
});
afterEach(() => redis.cleanup());

describe('scanRedisFor', () => {
  it('finds a needle in every kind of value and in key names, and nothing where there is none', async () => {
    const r = redis.redis;
    const p = redis.prefix;
    const needle = 'MRN-SCAN-NEEDLE';
    await r.set(`${p}:string`, `x${needle}y`);
    await r.hset(`${p}:hash-value`, 'f', `{"patient_id":"${needle}"}`);
    await r.hset(`${p}:hash-field`, needle, '1');
    await r.rpush(`${p}:list`, 'a', needle);
    await r.sadd(`${p}:set`, needle);
    await r.zadd(`${p}:zset`, 1, needle);
    await r.xadd(`${p}:stream`, '*', 'data', `{"id":"${needle}"}`);
    await r.set(`${p}:key-${needle}`, 'clean');
    await r.set(`${p}:clean`, 'nothing here');

    const found = await scanRedisFor(r, p, [needle]);
    expect(found.map((f) => `${f.key.slice(p.length + 1)} ${f.type} ${f.where}`).sort()).toEqual(
      [
        'hash-field hash field MRN-SCAN-NEEDLE',
        'hash-value hash value of f',
        `key-${needle} string key`,
        'list list item 1',
        'set set member',
        'stream stream entry ' +
          (found.find((f) => f.type === 'stream')?.where.split(' ')[1] ?? '') +
          ' #1',
        'string string value',
        'zset zset member',
      ].sort(),
    );
    expect(await scanRedisFor(r, p, ['MRN-ABSENT'])).toEqual([]);
  });
});
