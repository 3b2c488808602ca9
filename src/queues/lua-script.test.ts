import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { isolatedRedis, testRedisUrl } from '../../test/support/redis.ts';
import { LuaScriptError } from './lua-script-error.ts';
import { LuaScript } from './lua-script.ts';
import { readLuaFile } from './lua-source.ts';

/** A script whose source no other test has loaded into this Redis. */
function incrementBy(): LuaScript {
  return LuaScript.fromSource(
    'increment-by',
    `--[[
  Adds to a counter (${randomUUID()}).
  KEYS[1] the counter
  ARGV[1] how much
]]
return redis.call('INCRBY', KEYS[1], ARGV[1])
`,
  );
}

describe('LuaScript (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  beforeEach(async () => {
    env = await isolatedRedis();
  });
  afterEach(() => env.cleanup());

  it('runs a script the server does not know yet (NOSCRIPT -> EVAL), then by its SHA-1 alone', async () => {
    const script = incrementBy();
    const key = `${env.prefix}:counter`;
    expect(await env.redis.script('EXISTS', script.sha)).toEqual([0]);
    expect(await script.run(env.redis, [key], [2])).toBe(2);
    expect(await env.redis.script('EXISTS', script.sha)).toEqual([1]);
    const watcher = new Redis(testRedisUrl());
    const monitor = await watcher.monitor();
    const seen: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => seen.push(String(args[0])));
    expect(await script.run(env.redis, [key], [3])).toBe(5);
    await env.redis.ping();
    monitor.disconnect();
    watcher.disconnect();
    expect(seen.filter((c) => /^eval/i.test(c))).toEqual(['evalsha']);
  });

  it('runs in a MULTI after define(), and refuses one before it', async () => {
    const script = incrementBy();
    const key = `${env.prefix}:counter`;
    expect(() => script.stage(env.redis.multi(), [key], [1])).toThrow(LuaScriptError);
    script.define(env.redis);
    const results = await script.stage(env.redis.multi().set(key, 10), [key], [4]).exec();
    expect(results?.map(([, value]) => value)).toEqual(['OK', 14]);
  });

  it('checks every call against its header: the keys and arguments it names, no more, no less', async () => {
    const script = incrementBy();
    const key = `${env.prefix}:counter`;
    await expect(script.run(env.redis, [key, key], [1])).rejects.toThrow(
      'increment-by.lua takes 1 KEYS, its call gave 2',
    );
    await expect(script.run(env.redis, [key], [])).rejects.toThrow(
      'increment-by.lua takes 1 ARGV, its call gave 0',
    );
    expect(await env.redis.exists(key)).toBe(0);
  });

  it('passes script errors through', async () => {
    const script = LuaScript.fromSource(
      'refuses',
      `--[[\n  Refuses (${randomUUID()}).\n  KEYS[1] unused here but named\n]]\nlocal _ = KEYS[1]\nreturn redis.error_reply('ERR_TEST nope')\n`,
    );
    await expect(script.run(env.redis, [`${env.prefix}:k`], [])).rejects.toThrow('ERR_TEST nope');
  });

  it('takes a variable number of keys where its header says they go on', async () => {
    const script = LuaScript.fromSource(
      'delete-all',
      `--[[\n  Deletes every key (${randomUUID()}).\n  KEYS[1...] each key to delete\n]]\nif #KEYS == 0 then return 0 end\nreturn redis.call('DEL', unpack(KEYS))\n`,
    );
    const keys = ['a', 'b', 'c'].map((k) => `{${env.prefix}}:${k}`);
    for (const k of keys) await env.redis.set(k, 1);
    expect(await script.run(env.redis, keys, [])).toBe(3);
    expect(await script.run(env.redis, [], [])).toBe(0);
  });
});

describe('readLuaFile', () => {
  const files = (entries: Record<string, string>) => (path: string) => {
    const text = entries[path];
    if (text === undefined) throw new Error(`no file ${path}`);
    return text;
  };

  it('pulls in included functions once, includes of includes first', () => {
    const read = files({
      '/s/main.lua':
        '--[[\n  Main.\n  KEYS[1] k\n]]\n--- @include "inc/b"\n--- @include "inc/a"\nreturn b(a(KEYS[1]))\n',
      '/s/inc/a.lua': '--[[ a ]]\nlocal function a(x) return x end\n',
      '/s/inc/b.lua': '--[[ b ]]\n--- @include "a"\nlocal function b(x) return a(x) end\n',
    });
    const { name, source, keys, args } = readLuaFile('/s/main.lua', read);
    expect(name).toBe('main');
    expect(source).toBe(
      '--[[\n  Main.\n  KEYS[1] k\n]]\nlocal function a(x) return x end\n\nlocal function b(x) return a(x) end\nreturn b(a(KEYS[1]))\n',
    );
    expect([keys, args]).toEqual([
      { count: 1, variadic: false },
      { count: 0, variadic: false },
    ]);
  });

  it.each([
    ['no header', 'return 1\n', 'a script starts with its header'],
    [
      'a gap in the header',
      '--[[\n  KEYS[2] k\n]]\nreturn KEYS[2]\n',
      'lists KEYS[2] where KEYS[1] belongs',
    ],
    [
      'a key the header does not name',
      '--[[\n  KEYS[1] k\n]]\nreturn KEYS[2]\n',
      'uses KEYS[2], which its header does not name',
    ],
    [
      'an argument it never uses',
      '--[[\n  ARGV[1] a\n]]\nreturn 1\n',
      'names ARGV[1], which it never uses',
    ],
    [
      'a loop without "[n...]"',
      '--[[\n  ARGV[1] a\n]]\nreturn #ARGV + ARGV[1]\n',
      'its header must say where they go on',
    ],
    [
      'a key named in a comment only',
      '--[[\n  KEYS[1] k\n]]\n-- KEYS[1] is not used\nreturn 1\n',
      'names KEYS[1], which it never uses',
    ],
    [
      'a routing-only key it uses',
      '--[[\n  KEYS[1] (routing only) k\n]]\nreturn KEYS[1]\n',
      'which its header says it only routes by',
    ],
    [
      'a variadic entry not last',
      '--[[\n  KEYS[1...] k\n  KEYS[2] k\n]]\nreturn #KEYS\n',
      'only the last KEYS',
    ],
  ])('refuses %s', (_what, text, message) => {
    expect(() => readLuaFile('/s/x.lua', files({ '/s/x.lua': text }))).toThrow(message);
  });

  it('takes a key the script only routes by (its slot) when the header says so', () => {
    const text = '--[[\n  KEYS[1] (routing only) the slot\n  ARGV[1] a\n]]\nreturn ARGV[1]\n';
    const { keys } = readLuaFile('/s/x.lua', files({ '/s/x.lua': text }));
    expect(keys).toEqual({ count: 1, variadic: false });
  });

  it.each([
    ['no header', 'local function f() end\n', 'an included file starts with its header'],
    ['loose code', '--[[ i ]]\nredis.call("DEL", "x")\n', 'holds whole functions'],
    ['KEYS or ARGV', '--[[ i ]]\nlocal function f() return KEYS[1] end\n', 'as parameters'],
  ])('refuses an include with %s', (_what, text, message) => {
    const read = files({
      '/s/x.lua': '--[[\n  X.\n]]\n--- @include "i"\nreturn 1\n',
      '/s/i.lua': text,
    });
    expect(() => readLuaFile('/s/x.lua', read)).toThrow(message);
  });
});
