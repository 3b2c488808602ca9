import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver } from '../../test/support/otlp-receiver.ts';
import {
  CATEGORY,
  DEBOUNCE_MS,
  RULES,
  SCHEDULE,
  SubmissionFixture,
} from '../../test/support/submission-fixture.ts';
import { startTracing, type TracingHandle } from '../observability/tracing/start-tracing.ts';
import { deliveryTraceKey, queryTraceKey } from '../trace/trace-keys.ts';
import { LatencyProfiles } from './latency-profiles.ts';
import { PollScheduler } from './poll-scheduler.ts';
import { holdKey, PollSet } from './poll-set.ts';
import { QuerySpans } from './query-spans.ts';
import { QuerySubmission } from './query-submission.ts';
import { SubmissionStore } from './submission-store.ts';

const TTL_S = 3_600;
const silent = pino({ level: 'silent' });
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * A query's trace context through its scripts (real Redis) and its spans (an in-test OTLP
 * receiver): the claim reads the message's `tp` and gives it to the result event's trace; the
 * submission's `cgs.submit` span continues it; the remote job keeps the span's `traceparent`,
 * which `mark-submitted` gives to the result event's trace; each poll's `cgs.poll` span is its
 * child. Without tracing, nothing of it is written.
 */
describe('a query’s trace context (real Redis, OTLP receiver)', () => {
  let otlp: OtlpReceiver;
  let tracing: TracingHandle;
  let fx: SubmissionFixture;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    tracing = await startTracing({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
    });
  });
  afterAll(async () => {
    await tracing.shutdown();
    await otlp.close();
  });
  beforeEach(async () => {
    fx = await SubmissionFixture.create();
  });
  afterEach(() => fx.cleanup());

  const spansOf = (on: boolean) =>
    on ? new QuerySpans({ tracer: tracing.tracer, partition: 0 }) : undefined;

  function submission(spans: QuerySpans | undefined): QuerySubmission {
    const { env } = fx;
    const polls = new PollSet({
      redis: env.redis,
      prefix: env.prefix,
      holdKey: holdKey(env.prefix),
      pauseKey: `${env.prefix}:paused`,
    });
    return new QuerySubmission({
      store: new SubmissionStore(env.redis, env.prefix, TTL_S),
      ports: {
        ...fx.ports,
        submitted: (query, remote, firstPollAt) =>
          fx.stack.state.markSubmitted(
            query.patientServiceId,
            query.ccsrCategory,
            query.seq,
            remote,
            firstPollAt,
            TTL_S,
          ),
      },
      profiles: new LatencyProfiles({ source: polls, now: () => fx.clock }),
      rules: RULES,
      schedule: SCHEDULE,
      demographicsWaitS: 60,
      logger: silent,
      spans,
      now: () => fx.clock,
    });
  }

  function poller(spans: QuerySpans | undefined): PollScheduler {
    const { env } = fx;
    const polls = new PollSet({
      redis: env.redis,
      prefix: env.prefix,
      holdKey: holdKey(env.prefix),
      pauseKey: `${env.prefix}:paused`,
      traceTtlS: TTL_S,
    });
    return new PollScheduler({
      polls,
      ports: {
        poll: async () => ({ kind: 'pending' }),
        localIdOf: async (psid) => `local-${psid}`,
        deliver: async (events) => void fx.delivered.push(events),
        pauseForAuth: async () => undefined,
      },
      profiles: new LatencyProfiles({ source: polls, now: () => fx.clock }),
      rules: RULES,
      schedule: SCHEDULE,
      polling: { interval_ms: 10, batch: 10, concurrency: 10, lease_ms: 30_000 },
      logger: silent,
      spans,
      now: () => fx.clock,
    });
  }

  /** Opens a query whose trace keeps `tp` as the commit script writes it. */
  async function open(mrn: string, tp: string | undefined): Promise<string> {
    const psid = await fx.open(mrn);
    const key = queryTraceKey(fx.env.prefix, psid, CATEGORY, 1);
    await fx.env.redis.hset(key, 'opened_at', fx.clock, ...(tp === undefined ? [] : ['tp', tp]));
    return psid;
  }

  async function submitAndPoll(psid: string, spans: QuerySpans | undefined) {
    fx.clock += DEBOUNCE_MS;
    const step = await submission(spans).run(
      fx.query(psid),
      fx.clock,
      new AbortController().signal,
    );
    expect(step.kind).toBe('submitted');
    const p = poller(spans);
    fx.clock += SCHEDULE.firstDelayMs;
    await p.tick();
    await p.settled();
    const queryId = (await fx.env.redis.hget(fx.qs(psid), 'i:1')) as string;
    const deliveryTrace = await fx.env.redis.hgetall(deliveryTraceKey(fx.env.prefix, queryId));
    return { remote: await fx.remoteOf(psid), deliveryTrace };
  }

  it('continues the message’s trace from the claim to every poll and into the event’s trace', async () => {
    const traceId = hex(16);
    const ingest = hex(8);
    const psid = await open('MRN-TRACED', `00-${traceId}-${ingest}-01`);
    const { remote, deliveryTrace } = await submitAndPoll(psid, spansOf(true));
    await tracing.flush();
    const [submit] = otlp.named('cgs.submit').filter((s) => s.traceId === traceId);
    const [poll] = otlp.named('cgs.poll').filter((s) => s.traceId === traceId);
    expect(submit).toMatchObject({ parentSpanId: ingest });
    expect(submit?.attributes).toMatchObject({ 'cw.outcome': 'submitted', 'cw.query.seq': 1 });
    const own = `00-${traceId}-${submit?.spanId}-01`;
    expect(remote?.tp).toBe(own);
    // Written by mark-submitted, before any poll can hand the event over.
    expect(deliveryTrace.tp).toBe(own);
    expect(poll).toMatchObject({ parentSpanId: submit?.spanId });
    expect(poll?.attributes).toMatchObject({ 'cw.poll.attempt': 1, 'cw.outcome': 'pending' });
  });

  it('with tracing off: no span, no traceparent with the remote job; the message’s reaches the event', async () => {
    const tp = `00-${hex(16)}-${hex(8)}-01`;
    const psid = await open('MRN-OFF', tp);
    const { remote, deliveryTrace } = await submitAndPoll(psid, spansOf(false));
    expect(remote).toBeDefined();
    expect(remote).not.toHaveProperty('tp');
    // The claim's copy: an event that ended on the submission side is delivered in its trace.
    expect(deliveryTrace.tp).toBe(tp);
  });

  it('a query without a traceparent (its message not sampled) leaves none in its event’s trace', async () => {
    const psid = await open('MRN-NONE', undefined);
    const { deliveryTrace } = await submitAndPoll(psid, spansOf(false));
    expect(deliveryTrace).not.toHaveProperty('tp');
  });
});
