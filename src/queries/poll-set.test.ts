import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { holdKey, latencyKey, PollSet, pollSetKey, type PolledRemoteJob } from './poll-set.ts';
import { queryOutboxKey, queryStateKey } from './query-outbox.ts';
import { QueryState } from './query-state.ts';

const remote = (id: string, extra: Partial<PolledRemoteJob> = {}): PolledRemoteJob => ({
  remoteJobId: id,
  submittedAt: 1_000,
  resubmits: 0,
  recordVersion: 3,
  queryId: '00000000-0000-4000-8000-000000000001',
  polls: 0,
  ...extra,
});

describe('PollSet (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let state: QueryState;
  let polls: PollSet;
  const pauseKey = () => `${env.prefix}:paused-for-test`;

  beforeEach(async () => {
    env = await isolatedRedis();
    state = new QueryState({ redis: env.redis, prefix: env.prefix });
    polls = new PollSet({
      redis: env.redis,
      prefix: env.prefix,
      holdKey: holdKey(env.prefix),
      pauseKey: pauseKey(),
      latencyWindow: 3,
    });
  });
  afterEach(() => env.cleanup());

  /** Opens, claims and submits query 1 of (psid, category) with its first poll at `firstPollAt`. */
  async function submitted(psid: string, category: string, firstPollAt: number, id = 'j1') {
    await state.schedule(psid, category, { eventId: `ev-${psid}`, at: '2026-01-01T00:00:00Z' }, 0);
    await state.claim(psid, category, 1);
    await state.markSubmitted(psid, category, 1, remote(id), firstPollAt);
  }

  it('leases only what is due, up to the limit, with its state, and moves it to the lease end', async () => {
    await submitted('p1', 'END002', 100);
    await submitted('p2', 'END002', 200);
    await submitted('p3', 'END002', 5_000);

    const leased = await polls.lease(1_000, 1, 61_000);
    expect(leased).toEqual([
      {
        patientServiceId: 'p1',
        ccsrCategory: 'END002',
        seq: 1,
        member: 'p1|END002|1',
        dueAt: 100,
        submitted: 1,
        remote: remote('j1'),
        triggers: {
          eventIds: ['ev-p1'],
          count: 1,
          firstAt: '2026-01-01T00:00:00Z',
          lastAt: '2026-01-01T00:00:00Z',
        },
        leases: 1,
      },
    ]);
    expect(await env.redis.zscore(pollSetKey(env.prefix), 'p1|END002|1')).toBe('61000');
    // Leased: not due again before the lease ends; the rest due by then comes next.
    expect((await polls.lease(1_000, 10, 61_000)).map((p) => p.member)).toEqual(['p2|END002|1']);
    expect(await polls.lease(1_000, 10, 61_000)).toEqual([]);
    // A lease that ran out (its worker died) comes back, and counts as a second lease.
    const again = await polls.lease(61_000, 10, 121_000);
    expect(again.map((p) => [p.member, p.leases])).toEqual([
      ['p3|END002|1', 1],
      ['p1|END002|1', 2],
      ['p2|END002|1', 2],
    ]);
  });

  it('leases nothing while the partition is held (a rate limit) or paused (a refused key)', async () => {
    await submitted('p1', 'END002', 100);
    await polls.hold(60_000, 'rate_limited');
    expect(await polls.lease(1_000, 10, 61_000)).toEqual([]);
    await env.redis.del(holdKey(env.prefix));
    await env.redis.set(pauseKey(), 'ERR_SERVICE_AUTH');
    expect(await polls.lease(1_000, 10, 61_000)).toEqual([]);
    await env.redis.del(pauseKey());
    expect(await polls.lease(1_000, 10, 61_000)).toHaveLength(1);
  });

  it('drops a member whose remote job is gone (ended or purged) instead of leasing it', async () => {
    await submitted('p1', 'END002', 100);
    await state.finish('p1', 'END002', 1);
    expect(await polls.lease(1_000, 10, 61_000)).toEqual([]);
    expect(await env.redis.zcard(pollSetKey(env.prefix))).toBe(0);
  });

  it('writes outcomes back: again (new time and state, lease count reset), end (forgotten, latency learnt), resubmit', async () => {
    await submitted('p1', 'END002', 100, 'j1');
    await submitted('p2', 'END002', 100, 'j2');
    await submitted('p3', 'END002', 100, 'j3');
    const [a, b, c] = await polls.lease(1_000, 10, 61_000);
    if (a === undefined || b === undefined || c === undefined) throw new Error('3 leased');
    await polls.apply([
      { kind: 'again', poll: a, at: 2_500, remote: { ...a.remote, polls: 1, lastPollAt: 1_000 } },
      { kind: 'end', poll: b, latencyMs: 700 },
      { kind: 'resubmit', poll: c, at: 1_500, resubmits: 1 },
    ]);
    expect(await env.redis.zrange(pollSetKey(env.prefix), '0', '-1')).toEqual(['p1|END002|1']);
    expect(await env.redis.zscore(pollSetKey(env.prefix), 'p1|END002|1')).toBe('2500');
    const qs = (psid: string) => queryStateKey(env.prefix, psid, 'END002');
    expect(JSON.parse((await env.redis.hget(qs('p1'), 'r:1')) ?? '{}')).toMatchObject({
      polls: 1,
      lastPollAt: 1_000,
    });
    expect(await env.redis.hexists(qs('p1'), 'l:1')).toBe(0);
    expect(await env.redis.hmget(qs('p2'), 'r:1', 'c:1', 'l:1')).toEqual([null, null, null]);
    expect(await env.redis.lrange(latencyKey(env.prefix, 'END002'), 0, -1)).toEqual(['700']);
    // The resubmitted query keeps its remote job until its new submission replaces it, and is due
    // for submission again.
    expect(await env.redis.hexists(qs('p3'), 'r:1')).toBe(1);
    expect(await env.redis.hget(qs('p3'), 'n:1')).toBe('1');
    expect(await env.redis.zscore(queryOutboxKey(env.prefix), 'p3|END002|1')).toBe('1500');
    expect(await polls.latencies('END002')).toEqual([700]);
  });

  it('keeps only the latency window, newest first', async () => {
    for (const [i, psid] of ['p1', 'p2', 'p3', 'p4'].entries()) {
      await submitted(psid, 'END002', 100);
      const [poll] = await polls.lease(1_000, 1, 61_000);
      if (poll === undefined) throw new Error('leased');
      await polls.apply([{ kind: 'end', poll, latencyMs: (i + 1) * 100 }]);
    }
    expect(await polls.latencies('END002')).toEqual([400, 300, 200]);
  });

  it('does not bring back a poll whose query was purged while it was out', async () => {
    await submitted('p1', 'END002', 100);
    const [poll] = await polls.lease(1_000, 10, 61_000);
    if (poll === undefined) throw new Error('leased');
    await env.redis.del(queryStateKey(env.prefix, 'p1', 'END002'));
    await polls.apply([{ kind: 'again', poll, at: 2_000, remote: poll.remote }]);
    expect(await env.redis.zcard(pollSetKey(env.prefix))).toBe(0);
    expect(await env.redis.exists(queryStateKey(env.prefix, 'p1', 'END002'))).toBe(0);
  });

  it('reports its depth: size, due, and the oldest due time', async () => {
    await submitted('p1', 'END002', 100);
    await submitted('p2', 'END002', 300);
    await submitted('p3', 'END002', 5_000);
    expect(await polls.depth(1_000)).toEqual({ size: 3, due: 2, oldestDueAt: 100 });
    expect(await polls.depth(50)).toEqual({ size: 3, due: 0, oldestDueAt: null });
  });

  it('a hold is never shortened by a shorter one', async () => {
    await polls.hold(60_000, 'rate_limited');
    await polls.hold(1_000, 'rate_limited');
    expect(await env.redis.pttl(holdKey(env.prefix))).toBeGreaterThan(1_000);
  });
});
