import { Queue } from 'bullmq';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CATEGORY,
  DEBOUNCE_MS,
  PortFailure,
  SCHEDULE,
  SubmissionFixture,
} from '../../test/support/submission-fixture.ts';
import { stepPoller, stepSubmission } from '../../test/support/query-step-parts.ts';
import { FeedMetrics } from '../observability/feed-metrics.ts';
import { deliveryTraceKey, queryTraceKey } from '../trace/trace-keys.ts';
import { OutboxRelay } from './outbox-relay.ts';
import type { PollScheduler } from './poll-scheduler.ts';
import type { PollAnswer } from './query-lifecycle.ts';
import { submissionJobId } from './query-job.ts';
import type { QuerySubmission } from './query-submission.ts';

const TTL_S = 7 * 86_400;
const FEED = 'hl7v2-mllp';
const silent = pino({ level: 'silent' });

/**
 * Each step of a query writes its trace in the script it already runs (docs/message-trace.md):
 * the relay's release, the claim, `mark-submitted`, the due write-backs and the poll write-backs,
 * against real Redis. The commit script's part (`opened_at`, `feed`) is seeded as it writes it.
 */
describe('the query trace, step by step (real Redis)', () => {
  let fx: SubmissionFixture;
  let registry: Registry;
  const answers = new Map<string, PollAnswer>();

  beforeEach(async () => {
    fx = await SubmissionFixture.create();
    registry = new Registry();
    answers.clear();
  });
  afterEach(() => fx.cleanup());

  const redis = () => fx.env.redis;
  const prefix = () => fx.env.prefix;
  const traceOf = (psid: string, seq = 1) =>
    redis().hgetall(queryTraceKey(prefix(), psid, CATEGORY, seq));
  const traceKeys = () => redis().keys(`${prefix()}:trace:*`);

  /** Opens a query as ingest does, and its trace as the commit script writes it. */
  async function open(mrn: string): Promise<string> {
    const psid = await fx.open(mrn);
    const key = queryTraceKey(prefix(), psid, CATEGORY, 1);
    await redis().hset(key, 'opened_at', fx.clock, 'feed', FEED, 'messages', 1);
    await redis().expire(key, TTL_S);
    return psid;
  }

  const submission = (ttl: number) => stepSubmission(fx, { ttl, feeds: new FeedMetrics(registry) });
  const poller = (ttl: number) =>
    stepPoller(fx, {
      ttl,
      poll: async (remoteJobId) => answers.get(remoteJobId) ?? { kind: 'pending' },
    });

  const run = (s: QuerySubmission, psid: string) =>
    s.run(fx.query(psid), fx.clock, new AbortController().signal);

  async function pollOnce(p: PollScheduler): Promise<void> {
    await p.tick();
    await p.settled();
  }

  async function sent(): Promise<unknown[]> {
    const metric = registry.getSingleMetric('cw_feed_messages_total');
    return (await metric?.get())?.values.map((v) => [v.labels, v.value]) ?? [];
  }

  it('the relay notes when each query was queued, and its job id', async () => {
    const psid = await open('MRN-RELAY');
    const queue = new Queue('concordance-queries', { connection: redis(), prefix: prefix() });
    try {
      const relay = new OutboxRelay({
        redis: redis(),
        prefix: prefix(),
        dispatch: { interval_ms: 10_000, batch: 10, lease_ms: 5_000 },
        logger: silent,
        now: () => fx.clock,
        traceTtlS: TTL_S,
        async enqueue(entries) {
          await queue.addBulk(
            entries.map((e) => ({
              name: e.ccsrCategory,
              data: {},
              opts: { jobId: submissionJobId(e) },
            })),
          );
        },
      });
      fx.clock += 5;
      expect(await relay.tick()).toBe(1);
      await relay.settled();
      const jobId = submissionJobId({ ...fx.query(psid), resubmits: 0 });
      expect(await queue.getJob(jobId)).toBeDefined();
      expect(await traceOf(psid)).toMatchObject({
        queued_at: String(fx.clock),
        job_id: jobId,
      });
    } finally {
      await queue.close();
    }
  });

  it('a submitted query and its polls, to its end: every step, the feed counted sent and copied to its event', async () => {
    const psid = await open('MRN-1');
    const openedAt = fx.clock;
    const s = submission(TTL_S);
    // Attempt 1 fails (transient), attempt 2 submits.
    fx.posts.set(psid, [
      new PortFailure({ kind: 'transient', code: 'ERR_SERVICE_UNAVAILABLE', message: '503' }),
      'job-A',
    ]);
    fx.clock += DEBOUNCE_MS;
    const claimedAt = fx.clock;
    expect((await run(s, psid)).kind).toBe('retry');
    expect(await traceOf(psid)).toMatchObject({
      attempts: '1',
      claimed_at: String(claimedAt),
      last_error: 'ERR_SERVICE_UNAVAILABLE',
    });
    fx.clock += 1_000;
    expect(await run(s, psid)).toEqual({ kind: 'submitted', remoteJobId: 'job-A' });
    const submittedAt = fx.clock;
    const queryId = (await redis().hget(fx.qs(psid), 'i:1')) as string;
    expect(await traceOf(psid)).toMatchObject({
      attempts: '2',
      claimed_at: String(claimedAt),
      submitted_at: String(submittedAt),
      remote_job_id: 'job-A',
    });
    expect(await sent()).toEqual([[{ feed: FEED, stage: 'sent' }, 1]]);
    // The result event's trace knows its feed before the event is handed over.
    expect(await redis().hget(deliveryTraceKey(prefix(), queryId), 'feed')).toBe(FEED);

    // One poll finds it pending, the next completed.
    const p = poller(TTL_S);
    fx.clock += SCHEDULE.firstDelayMs;
    await pollOnce(p);
    expect(await traceOf(psid)).toMatchObject({ polls: '1', last_poll_at: String(fx.clock) });
    answers.set('job-A', { kind: 'success', concordance: { score: 1 } });
    fx.clock += SCHEDULE.maxDelayMs;
    await pollOnce(p);
    const trace = await traceOf(psid);
    expect(trace).toEqual({
      opened_at: String(openedAt),
      feed: FEED,
      messages: '1',
      attempts: '2',
      claimed_at: String(claimedAt),
      last_error: 'ERR_SERVICE_UNAVAILABLE',
      submitted_at: String(submittedAt),
      remote_job_id: 'job-A',
      polls: '2',
      last_poll_at: String(fx.clock),
      ended_at: String(fx.clock),
      outcome: 'completed',
      event_id: queryId,
    });
    expect(fx.events().map((e) => e.id)).toEqual([queryId]);
    const key = queryTraceKey(prefix(), psid, CATEGORY, 1);
    expect(await redis().ttl(key)).toBeGreaterThan(TTL_S - 60);
    expect(await redis().ttl(deliveryTraceKey(prefix(), queryId))).toBeGreaterThan(TTL_S - 60);
  });

  it('a query that ends at its submission notes its outcome, error code and event', async () => {
    const psid = await open('MRN-MISSING');
    fx.prepared.set(psid, { kind: 'missing' });
    fx.clock += DEBOUNCE_MS;
    expect(await run(submission(TTL_S), psid)).toMatchObject({
      kind: 'ended',
      outcome: 'rejected',
    });
    const [event] = fx.events();
    expect(await traceOf(psid)).toMatchObject({
      attempts: '1',
      ended_at: String(fx.clock),
      outcome: 'rejected',
      error_code: 'ERR_RECORD_MISSING',
      event_id: event?.id,
    });
    // Not sent: nothing counted.
    expect(await sent()).toEqual([]);
  });

  it('a stale query whose trace had not ended ends stale; a purged one gets no trace', async () => {
    const psid = await open('MRN-STALE');
    fx.clock += DEBOUNCE_MS;
    const s = submission(TTL_S);
    expect(await run(s, psid)).toMatchObject({ kind: 'submitted' });
    // Its claim is gone (it ended elsewhere without writing its trace): a second job is stale.
    await redis().hdel(fx.qs(psid), 'c:1');
    fx.clock += 10;
    expect(await run(s, psid)).toEqual({ kind: 'stale' });
    expect(await traceOf(psid)).toMatchObject({ ended_at: String(fx.clock), outcome: 'stale' });
    // A query with no trace (its patient purged) is not given one.
    await redis().del(queryTraceKey(prefix(), psid, CATEGORY, 1));
    expect(await run(s, psid)).toEqual({ kind: 'stale' });
    expect(await traceOf(psid)).toEqual({});
  });

  it('a trace erased between the claim and the end (a purge) is not written again', async () => {
    const psid = await open('MRN-ERASED');
    fx.prepared.set(psid, { kind: 'missing' });
    fx.whilePreparing.set(psid, async () => {
      await redis().del(queryTraceKey(prefix(), psid, CATEGORY, 1));
    });
    fx.clock += DEBOUNCE_MS;
    expect(await run(submission(TTL_S), psid)).toMatchObject({ kind: 'ended' });
    expect(await traceOf(psid)).toEqual({});
  });

  it('with the trace off, no step writes any of it (the commit wrote none either)', async () => {
    const psid = await fx.open('MRN-OFF');
    fx.posts.set(psid, [
      new PortFailure({ kind: 'transient', code: 'ERR_SERVICE_UNAVAILABLE', message: '503' }),
    ]);
    fx.clock += DEBOUNCE_MS;
    const s = submission(0);
    expect((await run(s, psid)).kind).toBe('retry');
    expect(await run(s, psid)).toMatchObject({ kind: 'submitted' });
    const p = poller(0);
    const [remote] = [await fx.remoteOf(psid)];
    answers.set(remote?.remoteJobId ?? '', { kind: 'success', concordance: { score: 1 } });
    fx.clock += SCHEDULE.firstDelayMs;
    await pollOnce(p);
    expect(fx.events()).toHaveLength(1);
    expect(await traceKeys()).toEqual([]);
    // No feed known: `sent` is not counted.
    expect(await sent()).toEqual([]);
  });
});
