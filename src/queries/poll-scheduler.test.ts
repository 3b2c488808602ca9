import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ResultEvent } from '../interface/result-event.ts';
import { isolatedRedis } from '../../test/support/redis.ts';
import { LatencyProfiles } from './latency-profiles.ts';
import { PollScheduler, type PollPorts, type PolledOutcome } from './poll-scheduler.ts';
import { holdKey, PollSet, pollSetKey } from './poll-set.ts';
import type { LifecycleRules, PollAnswer } from './query-lifecycle.ts';
import { queryOutboxKey, queryStateKey } from './query-outbox.ts';
import { QueryState } from './query-state.ts';

const RULES: LifecycleRules = {
  deadlineMs: 60_000,
  resubmitLost: 1,
  deliverSuperseded: false,
  maxStalledCount: 2,
  authPauseMs: 1_000,
  submitAttempts: 3,
};
const SCHEDULE = { firstDelayMs: 100, factor: 2, maxDelayMs: 1_000, jitter: 0, deadlineMs: 60_000 };

/**
 * The scheduler against real Redis; the service is a table of answers per remote job (the port's
 * contract), the clock is the test's.
 */
describe('PollScheduler (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let state: QueryState;
  let polls: PollSet;
  let clock: number;
  const answers = new Map<string, PollAnswer>();
  const sent: string[] = [];
  const delivered: ResultEvent[][] = [];
  const outcomes: PolledOutcome[] = [];
  let pauses = 0;

  const ports: PollPorts = {
    async poll(remoteJobId) {
      sent.push(remoteJobId);
      return answers.get(remoteJobId) ?? { kind: 'pending' };
    },
    localIdOf: async (psid) => `local-${psid}`,
    async deliver(events) {
      delivered.push(events);
    },
    async pauseForAuth() {
      pauses += 1;
    },
  };

  const scheduler = (batch = 10) =>
    new PollScheduler({
      polls,
      ports,
      profiles: new LatencyProfiles({ source: polls, now: () => clock }),
      rules: RULES,
      schedule: SCHEDULE,
      polling: { interval_ms: 10, batch, concurrency: batch, lease_ms: 30_000 },
      logger: pino({ level: 'silent' }),
      onOutcome: (o) => outcomes.push(o),
      now: () => clock,
    });

  beforeEach(async () => {
    env = await isolatedRedis();
    state = new QueryState({ redis: env.redis, prefix: env.prefix });
    polls = new PollSet({
      redis: env.redis,
      prefix: env.prefix,
      holdKey: holdKey(env.prefix),
      pauseKey: `${env.prefix}:paused`,
    });
    clock = 10_000;
    answers.clear();
    for (const list of [sent, delivered, outcomes]) list.length = 0;
    pauses = 0;
  });
  afterEach(() => env.cleanup());

  async function submit(psid: string, remoteJobId: string, seq = 1) {
    await state.schedule(psid, 'END002', { eventId: `ev-${psid}-${seq}`, at: 'x' }, 0);
    await state.claim(psid, 'END002', seq);
    await state.markSubmitted(
      psid,
      'END002',
      seq,
      {
        remoteJobId,
        submittedAt: clock,
        resubmits: 0,
        recordVersion: 1,
        queryId: `00000000-0000-4000-8000-00000000000${seq}`,
        polls: 0,
      },
      clock,
    );
  }

  async function tickAndSettle(s: PollScheduler): Promise<number> {
    const n = await s.tick();
    await s.settled();
    return n;
  }

  it('hands every finished result over in one call, then forgets the query', async () => {
    await submit('p1', 'j1');
    await submit('p2', 'j2');
    answers.set('j1', { kind: 'success', concordance: { score: 1 } });
    answers.set('j2', { kind: 'failure', status: 'error', concordance: null });
    clock += 2_000;
    expect(await tickAndSettle(scheduler())).toBe(2);

    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.map((e) => [e.patient_id, e.status, e.error?.code ?? null])).toEqual([
      ['local-p1', 'completed', null],
      ['local-p2', 'failed', 'ERR_REMOTE_JOB_FAILED'],
    ]);
    expect(outcomes.map((o) => o.eventId)).toEqual(delivered[0]?.map((e) => e.id));
    expect(await env.redis.zcard(pollSetKey(env.prefix))).toBe(0);
    // The latency is learnt: the middle of submission and detection.
    expect(await polls.latencies('END002')).toEqual([1_000, 1_000]);
  });

  it('polls a pending job again at its next time, and only then', async () => {
    await submit('p1', 'j1');
    const s = scheduler();
    expect(await tickAndSettle(s)).toBe(1);
    expect(await tickAndSettle(s)).toBe(0);
    // Poll 1 comes first_delay_ms * factor later (no jitter).
    clock += 199;
    expect(await tickAndSettle(s)).toBe(0);
    clock += 1;
    expect(await tickAndSettle(s)).toBe(1);
    expect(sent).toEqual(['j1', 'j1']);
    expect(delivered).toEqual([]);
  });

  it('sends a lost job back to submission once, then ends it lost', async () => {
    await submit('p1', 'j1');
    answers.set('j1', { kind: 'lost' });
    expect(await tickAndSettle(scheduler())).toBe(1);
    // Back in the due set of new queries, due now, with its resubmission counted.
    expect(await env.redis.zcard(pollSetKey(env.prefix))).toBe(0);
    expect(await env.redis.zscore(queryOutboxKey(env.prefix), 'p1|END002|1')).toBe(String(clock));
    expect(await env.redis.hget(queryStateKey(env.prefix, 'p1', 'END002'), 'n:1')).toBe('1');
  });

  it('holds the partition for a 429 and pauses it for a refused key', async () => {
    await submit('p1', 'j1');
    await submit('p2', 'j2');
    answers.set('j1', { kind: 'rate_limited', retryAfterMs: 5_000 });
    const s = scheduler();
    expect(await tickAndSettle(s)).toBe(2);
    expect(await env.redis.pttl(holdKey(env.prefix))).toBeGreaterThan(4_000);
    expect(await tickAndSettle(s)).toBe(0);
    await env.redis.del(holdKey(env.prefix));
    answers.set('j1', { kind: 'auth_refused' });
    clock += 5_000;
    await tickAndSettle(s);
    expect(pauses).toBe(1);
  });

  it('ends a superseded query without an event', async () => {
    await submit('p1', 'j1', 1);
    await submit('p1', 'j2', 2);
    await tickAndSettle(scheduler());
    expect(outcomes.map((o) => [o.data.seq, o.decision.kind])).toEqual([[1, 'forget']]);
    expect(sent).toEqual(['j2']);
  });

  it('two schedulers never lease the same poll', async () => {
    for (let i = 0; i < 20; i++) await submit(`p${i}`, `j${i}`);
    const [a, b] = [scheduler(7), scheduler(7)];
    const leased = await Promise.all([a.tick(), b.tick(), a.tick(), b.tick()]);
    await Promise.all([a.settled(), b.settled()]);
    expect(leased.reduce((x, y) => x + y, 0)).toBe(14);
    expect(new Set(sent).size).toBe(sent.length);
  });
});
