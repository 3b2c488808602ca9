import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { PresetStore } from './preset-store.ts';

describe('PresetStore (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let store: PresetStore;

  beforeEach(async () => {
    env = await isolatedRedis();
    store = new PresetStore({ redis: env.redis, prefix: env.prefix });
  });
  afterEach(() => env.cleanup());

  it('creates a preset once and keeps its first source and creation time', async () => {
    const first = new Date('2026-01-02T03:04:05.000Z');
    expect(await store.put('psid-1', 'END002', 'registered', first)).toBe('created');
    expect(await store.put('psid-1', 'END002', 'problem_list', new Date())).toBe('existing');
    expect(await store.get('psid-1', 'END002')).toEqual({
      ccsr_category: 'END002',
      source: 'registered',
      created_at: first.toISOString(),
    });
    expect(await store.get('psid-1', 'CIR007')).toBeUndefined();
  });

  it('lists a patient’s presets ordered by category, and only that patient’s', async () => {
    await store.put('psid-1', 'END002', 'registered');
    await store.put('psid-1', 'CIR007', 'problem_list');
    await store.put('psid-2', 'RSP009', 'registered');
    const listed = await store.list('psid-1');
    expect(listed.map((p) => [p.ccsr_category, p.source])).toEqual([
      ['CIR007', 'problem_list'],
      ['END002', 'registered'],
    ]);
    for (const p of listed) expect(Date.parse(p.created_at)).not.toBeNaN();
    expect(await store.list('psid-none')).toEqual([]);
  });

  it('deletes a preset and says whether there was one', async () => {
    await store.put('psid-1', 'END002', 'registered');
    expect(await store.delete('psid-1', 'END002')).toBe(true);
    expect(await store.delete('psid-1', 'END002')).toBe(false);
    expect(await store.list('psid-1')).toEqual([]);
  });

  it('keeps its keys under the prefix', async () => {
    await store.put('psid-1', 'END002', 'registered');
    expect(await env.redis.keys(`${env.prefix}:presets:*`)).toEqual([
      `${env.prefix}:presets:psid-1`,
    ]);
  });
});
