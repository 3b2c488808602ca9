import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { DemographicsWait } from './demographics-wait.ts';

let env: Awaited<ReturnType<typeof isolatedRedis>>;
let wait: DemographicsWait;
const DAY = 86_400_000;

beforeEach(async () => {
  env = await isolatedRedis();
  wait = new DemographicsWait({ redis: env.redis, prefix: env.prefix });
});
afterEach(() => env.cleanup());

describe('DemographicsWait', () => {
  it('waits until the first wait of the key plus the allowed time, then expires once', async () => {
    expect(await wait.park('p1', 'END002', 1, 1_000, 30 * DAY)).toEqual({
      kind: 'wait',
      until: 1_000 + 30 * DAY,
    });
    // A newer query of the key waits in its place, and the wait still counts from the first.
    expect(await wait.park('p1', 'END002', 2, 5_000, 30 * DAY)).toEqual({
      kind: 'wait',
      until: 1_000 + 30 * DAY,
    });
    expect(await wait.park('p1', 'END002', 1, 1_000 + 30 * DAY, 30 * DAY)).toEqual({
      kind: 'replaced',
    });
    expect(await wait.count()).toBe(1);
    expect(await wait.park('p1', 'END002', 2, 1_000 + 30 * DAY, 30 * DAY)).toEqual({
      kind: 'expired',
    });
    expect(await wait.count()).toBe(0);
  });

  it('forgets a key once its record could be assembled, and a patient on a purge', async () => {
    await wait.park('p1', 'END002', 1, 0, DAY);
    await wait.park('p1', 'CIR007', 1, 0, DAY);
    await wait.park('p10', 'END002', 1, 0, DAY);
    await wait.release('p1', 'CIR007');
    expect(await wait.count()).toBe(2);
    // `p1|` is not a prefix of `p10|`: the other patient stays.
    expect(await wait.erase('p1')).toBe(1);
    expect(await wait.count()).toBe(1);
    expect(await env.redis.hkeys(`${env.prefix}:waitdemo:seq`)).toEqual(['p10|END002']);
  });
});
