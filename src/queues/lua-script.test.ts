import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { LuaScript } from './lua-script.ts';

describe('LuaScript (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  beforeEach(async () => {
    env = await isolatedRedis();
  });
  afterEach(() => env.cleanup());

  it('runs a script the server does not know yet (NOSCRIPT -> EVAL), then by its SHA-1 alone', async () => {
    // A source of its own, so that no other test has loaded it into this Redis.
    const script = new LuaScript(
      `-- ${randomUUID()}\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])`,
    );
    const key = `${env.prefix}:counter`;
    expect(await env.redis.script('EXISTS', script.sha)).toEqual([0]);
    expect(await script.run(env.redis, [key], [2])).toBe(2);
    // EVAL cached it under the same SHA-1: the next call is an EVALSHA.
    expect(await env.redis.script('EXISTS', script.sha)).toEqual([1]);
    expect(await script.run(env.redis, [key], [3])).toBe(5);
  });

  it('passes script errors through', async () => {
    const script = new LuaScript(`-- ${randomUUID()}\nreturn redis.error_reply('ERR_TEST nope')`);
    await expect(script.run(env.redis, [`${env.prefix}:k`], [])).rejects.toThrow('ERR_TEST nope');
  });
});
