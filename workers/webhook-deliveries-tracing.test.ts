import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebhookSpans } from '../src/delivery/webhook-span.ts';
import type { ResultEvent } from '../src/interface/result-event.ts';
import { deliveryTraceKey } from '../src/trace/trace-keys.ts';
import { makeEvent } from '../test/integration/delivery/delivery-fixture.ts';
import { captureLogs } from '../test/support/log-capture.ts';
import { otlpTracingForSuite } from '../test/support/otlp-tracing.ts';
import { WebhookJobRig } from '../test/support/webhook-job-rig.ts';
import { webhookDeliveryProcessor } from './webhook-deliveries.ts';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * The webhook attempt's span (real BullMQ jobs, real Redis, a real receiver, spans exported to an
 * in-test OTLP receiver): `webhook.deliver` continues the `traceparent` the event's delivery trace
 * keeps, and the request carries the span's own `traceparent` when the trace is sampled, never
 * when it is not nor when tracing is off.
 */
describe('webhook.deliver spans and the traceparent header', () => {
  const suite = otlpTracingForSuite();
  let rig: WebhookJobRig;
  let status: number;

  beforeEach(async () => {
    status = 204;
    rig = await WebhookJobRig.start(() => status);
  });
  afterEach(() => rig.close());

  /** Hands `event` over (its delivery trace keeping `tp`), takes its job and runs the processor. */
  async function deliver(event: ResultEvent, tp: string | undefined, traced = true) {
    const { redis, prefix } = rig.env;
    if (tp !== undefined) await redis.hset(deliveryTraceKey(prefix, event.id), 'tp', tp);
    const parts = rig.parts({
      traceTtlS: 3_600,
      logger: captureLogs().logger,
      now: Date.now,
      spans: traced ? new WebhookSpans(suite.tracing.tracer, rig.receiver.url) : undefined,
    });
    await rig.handOver(parts, event, Date.now());
    const { job, token } = await rig.next();
    expect(job.data.event_id).toBe(event.id);
    const result = await webhookDeliveryProcessor(parts)(job, token);
    return { result, attempt: rig.receiver.attempts.find((a) => a.webhookId === event.id) };
  }

  it('continues the stored traceparent and sends the span’s own; a 410 is dead-lettered', async () => {
    const traceId = hex(16);
    const parent = hex(8);
    const ok = await deliver(makeEvent(), `00-${traceId}-${parent}-01`);
    expect(ok.result).toMatchObject({ outcome: 'delivered', status: 204 });
    status = 410;
    const gone = await deliver(makeEvent(), `00-${traceId}-${parent}-01`);
    expect(gone.result).toMatchObject({ outcome: 'dead_lettered', code: 'ERR_WEBHOOK_GONE' });
    await suite.tracing.flush();
    const spans = suite.otlp.named('webhook.deliver').filter((s) => s.traceId === traceId);
    expect(spans).toHaveLength(2);
    const [delivered, dead] = spans;
    const { port } = new URL(rig.receiver.url);
    expect(delivered).toMatchObject({ parentSpanId: parent, kind: 3 });
    expect(delivered?.attributes).toEqual({
      'http.request.method': 'POST',
      'http.response.status_code': 204,
      'server.address': '127.0.0.1',
      'server.port': Number(port),
      'url.scheme': 'http',
      'cw.delivery.attempt': 1,
      'cw.outcome': 'delivered',
    });
    expect(dead?.attributes).toMatchObject({
      'http.response.status_code': 410,
      'cw.outcome': 'dead_lettered',
      'cw.error.code': 'ERR_WEBHOOK_GONE',
    });
    expect(dead?.statusCode).toBe(2);
    expect(ok.attempt?.headers.traceparent).toBe(`00-${traceId}-${delivered?.spanId}-01`);
    expect(gone.attempt?.headers.traceparent).toBe(`00-${traceId}-${dead?.spanId}-01`);
    // The receiver's path is never exported.
    expect(suite.otlp.bodies.join('\n')).not.toContain(new URL(rig.receiver.url).pathname);
  });

  it('sends no traceparent when the trace is not sampled, and exports no span', async () => {
    const traceId = hex(16);
    const { result, attempt } = await deliver(makeEvent(), `00-${traceId}-${hex(8)}-00`);
    expect(result).toMatchObject({ outcome: 'delivered' });
    expect(attempt?.verified).toBe(true);
    expect(attempt?.headers).not.toHaveProperty('traceparent');
    await suite.tracing.flush();
    expect(suite.otlp.spans.filter((s) => s.traceId === traceId)).toEqual([]);
  });

  it('with tracing off (no spans) sends no traceparent, whatever the trace keeps', async () => {
    const { result, attempt } = await deliver(makeEvent(), `00-${hex(16)}-${hex(8)}-01`, false);
    expect(result).toMatchObject({ outcome: 'delivered' });
    expect(attempt?.headers).not.toHaveProperty('traceparent');
  });
});
