import { Queue } from 'bullmq';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { OutboxRelay, relayLeaseKey, type OutboxEntry } from './outbox-relay.ts';
import { submissionJobId } from './query-job.ts';
import { queryOutboxKey, queryStateKey } from './query-outbox.ts';
import { QueryState } from './query-state.ts';

const silent = pino({ level: 'silent' });
const dispatch = { interval_ms: 10_000, batch: 2, lease_ms: 5_000 };

describe('OutboxRelay (real Redis, real BullMQ queue)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let state: QueryState;
  let queue: Queue;

  beforeEach(async () => {
    env = await isolatedRedis();
    state = new QueryState({ redis: env.redis, prefix: env.prefix });
    queue = new Queue('concordance-queries', { connection: env.redis, prefix: env.prefix });
  });
  afterEach(async () => {
    await queue.close();
    await env.cleanup();
  });

  /** Opens a query of (psid, category), due `debounceMs` after `at`. */
  function open(psid: string, category: string, at: number, debounceMs: number) {
    return state.schedule(
      psid,
      category,
      { eventId: `ev-${psid}-${category}`, at: new Date(at).toISOString() },
      at + debounceMs,
    );
  }

  /** A relay whose enqueue adds to the real queue (as the worker's does), recording each call. */
  function relay(calls: OutboxEntry[][], now: () => number, fail = false) {
    return new OutboxRelay({
      redis: env.redis,
      prefix: env.prefix,
      dispatch,
      logger: silent,
      now,
      async enqueue(entries, at) {
        calls.push([...entries]);
        if (fail) throw new Error('redis went away');
        await queue.addBulk(
          entries.map((e) => ({
            name: e.ccsrCategory,
            data: { seq: e.seq },
            opts: { jobId: submissionJobId(e), ...(e.dueAt > at ? { delay: e.dueAt - at } : {}) },
          })),
        );
      },
    });
  }

  it('adds the outbox batch by batch, delayed by what is left of the debounce, then empties it', async () => {
    const t0 = Date.now();
    await open('p1', 'END002', t0, 60_000);
    await open('p2', 'END002', t0, 0);
    await open('p3', 'CIR007', t0, 0);
    const calls: OutboxEntry[][] = [];
    const r = relay(calls, () => t0);

    expect(await r.tick()).toBe(2);
    await r.settled();
    expect(await r.tick()).toBe(1);
    await r.settled();
    expect(await r.tick()).toBe(0);

    // Due order: the two due at once first, then the one still in its debounce.
    expect(calls.map((batch) => batch.map((e) => e.patientServiceId))).toEqual([
      ['p2', 'p3'],
      ['p1'],
    ]);
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
    expect(await queue.getJobCounts('waiting', 'delayed')).toEqual({ waiting: 2, delayed: 1 });
    const delayed = await queue.getJob(
      submissionJobId({ patientServiceId: 'p1', ccsrCategory: 'END002', seq: 1, resubmits: 0 }),
    );
    expect(delayed?.opts.delay).toBe(60_000);
  });

  it('leaves the entries in the outbox when the add fails, and a second add is the same job', async () => {
    const t0 = Date.now();
    await open('p1', 'END002', t0, 0);
    const failing = relay([], () => t0, true);
    await failing.tick();
    await failing.settled();
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(1);
    await env.redis.del(relayLeaseKey(env.prefix));

    // Added once, but not removed (a relay killed in between): the next relay adds it again.
    await queue.add('END002', { seq: 1 }, { jobId: 'q-p1-END002-1' });
    const calls: OutboxEntry[][] = [];
    const r = relay(calls, () => t0);
    await r.tick();
    await r.settled();
    expect(calls).toHaveLength(1);
    expect(await queue.getJobCounts('waiting', 'delayed')).toEqual({ waiting: 1, delayed: 0 });
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
  });

  it('one relay of a partition reads at a time, and a resubmission is a job of its own', async () => {
    const t0 = Date.now();
    await open('p1', 'END002', t0, 0);
    const first = relay([], () => t0);
    const secondCalls: OutboxEntry[][] = [];
    const second = relay(secondCalls, () => t0);
    await first.tick();
    await first.settled();
    // The first holds the lease: the second reads nothing while it lasts.
    await open('p2', 'END002', t0, 0);
    expect(await second.tick()).toBe(0);
    expect(await env.redis.pttl(relayLeaseKey(env.prefix))).toBeGreaterThan(0);

    // The poll side put p1's query back for a resubmission (`n:1` = 1).
    await env.redis.hset(queryStateKey(env.prefix, 'p1', 'END002'), 'n:1', 1);
    await env.redis.zadd(queryOutboxKey(env.prefix), t0 + 1, 'p1|END002|1');
    await first.tick();
    await first.settled();
    const ids = (await queue.getJobs(['waiting', 'delayed'])).map((j) => j.id).sort();
    expect(ids).toEqual(['q-p1-END002-1', 'q-p1-END002-1-r1', 'q-p2-END002-1']);
  });

  it('keeps an entry whose due time changed while it was being added', async () => {
    const t0 = Date.now();
    await open('p1', 'END002', t0, 0);
    const calls: OutboxEntry[][] = [];
    const r = new OutboxRelay({
      redis: env.redis,
      prefix: env.prefix,
      dispatch,
      logger: silent,
      now: () => t0,
      async enqueue(entries) {
        calls.push([...entries]);
        // Meanwhile the query was put back with another due time (a resubmission).
        await env.redis.zadd(queryOutboxKey(env.prefix), t0 + 5, 'p1|END002|1');
      },
    });
    await r.tick();
    await r.settled();
    expect(calls).toHaveLength(1);
    expect(await env.redis.zscore(queryOutboxKey(env.prefix), 'p1|END002|1')).toBe(String(t0 + 5));
  });
});
