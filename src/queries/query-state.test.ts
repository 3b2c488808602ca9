import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { MAX_TRIGGER_IDS, QueryState } from './query-state.ts';

const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString();

describe('QueryState (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let state: QueryState;

  beforeEach(async () => {
    env = await isolatedRedis();
    state = new QueryState({ redis: env.redis, prefix: env.prefix });
  });
  afterEach(() => env.cleanup());

  it('coalesces updates into the open query until it is claimed, then opens the next', async () => {
    expect(await state.schedule('p', 'END002', { eventId: 'e1', at: at(1) }, 0)).toEqual({
      seq: 1,
      coalesced: false,
    });
    expect(await state.schedule('p', 'END002', { eventId: 'e2', at: at(2) }, 0)).toEqual({
      seq: 1,
      coalesced: true,
    });
    expect(await state.schedule('p', 'CIR007', { eventId: 'e2', at: at(2) }, 0)).toEqual({
      seq: 1,
      coalesced: false,
    });

    expect(await state.claim('p', 'END002', 1)).toEqual({
      eventIds: ['e1', 'e2'],
      count: 2,
      firstAt: at(1),
      lastAt: at(2),
    });
    expect(await state.schedule('p', 'END002', { eventId: 'e3', at: at(3) }, 0)).toEqual({
      seq: 2,
      coalesced: false,
    });
  });

  it('answers a repeated claim the same way and refuses a stale one', async () => {
    await state.schedule('p', 'END002', { eventId: 'e1', at: at(1) }, 0);
    const first = await state.claim('p', 'END002', 1);
    expect(await state.claim('p', 'END002', 1)).toEqual(first);
    expect(await state.claim('p', 'END002', 7)).toBeUndefined();
    await state.finish('p', 'END002', 1);
    expect(await state.claim('p', 'END002', 1)).toBeUndefined();
  });

  it('loses no update when many arrive at once: each lands in exactly one query', async () => {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        state.schedule('p', 'END002', { eventId: `e${i}`, at: at(i % 60) }, 0),
      ),
    );
    expect(results.filter((r) => !r.coalesced)).toHaveLength(1);
    const claimed = await state.claim('p', 'END002', 1);
    expect(claimed?.count).toBe(40);
    expect(new Set(claimed?.eventIds).size).toBe(40);
  });

  it('keeps only the newest event ids of a long burst, but counts them all', async () => {
    for (let i = 0; i < MAX_TRIGGER_IDS + 5; i++) {
      await state.schedule('p', 'END002', { eventId: `e${i}`, at: at(i % 60) }, 0);
    }
    const claimed = await state.claim('p', 'END002', 1);
    expect(claimed?.count).toBe(MAX_TRIGGER_IDS + 5);
    expect(claimed?.eventIds).toHaveLength(MAX_TRIGGER_IDS);
    expect(claimed?.eventIds[0]).toBe('e5');
    expect(claimed?.eventIds.at(-1)).toBe(`e${MAX_TRIGGER_IDS + 4}`);
  });

  const remote = (id: string, resubmits = 0) => ({
    remoteJobId: id,
    submittedAt: 1,
    resubmits,
    recordVersion: 1,
  });

  it('supersedes older queries once a newer one is submitted, never the other way', async () => {
    await state.markSubmitted('p', 'END002', 1, remote('j1'), 0);
    expect(await state.isSuperseded('p', 'END002', 1)).toBe(false);
    await state.markSubmitted('p', 'END002', 2, remote('j2'), 0);
    expect(await state.isSuperseded('p', 'END002', 1)).toBe(true);
    expect(await state.isSuperseded('p', 'END002', 2)).toBe(false);
    await state.markSubmitted('p', 'END002', 1, remote('j1b', 1), 0); // a resubmission of the older one
    expect(await state.isSuperseded('p', 'END002', 2)).toBe(false);
  });
});
