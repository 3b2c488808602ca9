import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { otlpTracingForSuite } from '../../test/support/otlp-tracing.ts';
import { stepPoller, stepSubmission } from '../../test/support/query-step-parts.ts';
import {
  CATEGORY,
  DEBOUNCE_MS,
  SCHEDULE,
  SubmissionFixture,
} from '../../test/support/submission-fixture.ts';
import { deliveryTraceKey, queryTraceKey } from '../trace/trace-keys.ts';
import { QuerySpans } from './query-spans.ts';

const TTL_S = 3_600;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * A query's trace context through its scripts (real Redis) and its spans (an in-test OTLP
 * receiver): the claim reads the message's `tp` and gives it to the result event's trace; the
 * submission's `cgs.submit` span continues it; the remote job keeps the span's `traceparent`,
 * which `mark-submitted` gives to the result event's trace; each poll's `cgs.poll` span is its
 * child. Without tracing, nothing of it is written.
 */
describe('a query’s trace context (real Redis, OTLP receiver)', () => {
  const suite = otlpTracingForSuite();
  let fx: SubmissionFixture;

  beforeEach(async () => {
    fx = await SubmissionFixture.create();
  });
  afterEach(() => fx.cleanup());

  const spansOf = (on: boolean) =>
    on ? new QuerySpans({ tracer: suite.tracing.tracer, partition: 0 }) : undefined;

  /** Opens a query whose trace keeps `tp` as the commit script writes it. */
  async function open(mrn: string, tp: string | undefined): Promise<string> {
    const psid = await fx.open(mrn);
    const key = queryTraceKey(fx.env.prefix, psid, CATEGORY, 1);
    await fx.env.redis.hset(key, 'opened_at', fx.clock, ...(tp === undefined ? [] : ['tp', tp]));
    return psid;
  }

  async function submitAndPoll(psid: string, spans: QuerySpans | undefined) {
    fx.clock += DEBOUNCE_MS;
    const step = await stepSubmission(fx, { ttl: TTL_S, spans }).run(
      fx.query(psid),
      fx.clock,
      new AbortController().signal,
    );
    expect(step.kind).toBe('submitted');
    const p = stepPoller(fx, { ttl: TTL_S, spans });
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
    await suite.tracing.flush();
    const [submit] = suite.otlp.named('cgs.submit').filter((s) => s.traceId === traceId);
    const [poll] = suite.otlp.named('cgs.poll').filter((s) => s.traceId === traceId);
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
