import { randomBytes, randomUUID } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeadLetterStore } from '../src/delivery/dead-letter-store.ts';
import { WebhookClient } from '../src/delivery/webhook-client.ts';
import {
  WEBHOOK_DELIVERIES,
  type WebhookJobData,
} from '../src/delivery/webhook-deliveries-queue.ts';
import { WebhookDeliveryJobs } from '../src/delivery/webhook-delivery-jobs.ts';
import { queryKeyOf, WebhookDeliveryStore } from '../src/delivery/webhook-delivery-store.ts';
import { WebhookSigner } from '../src/delivery/webhook-signer.ts';
import { WebhookSpans } from '../src/delivery/webhook-span.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../src/identity/crosswalk-keys.ts';
import type { ResultEvent } from '../src/interface/result-event.ts';
import { startTracing, type TracingHandle } from '../src/observability/tracing/start-tracing.ts';
import type { RedisClient } from '../src/queues/redis-client.ts';
import { deliveryTraceKey } from '../src/trace/trace-keys.ts';
import { makeEvent, newSecret } from '../test/integration/delivery/delivery-fixture.ts';
import { captureLogs } from '../test/support/log-capture.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../test/support/otlp-receiver.ts';
import { isolatedRedis } from '../test/support/redis.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../tools/webhook-receiver.ts';
import {
  webhookDeliveryProcessor,
  type WebhookDeliveryParts,
  type WebhookJobResult,
} from './webhook-deliveries.ts';

type WebhookJob = Job<WebhookJobData, WebhookJobResult>;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * The webhook attempt's span (real BullMQ jobs, real Redis, a real receiver, spans exported to an
 * in-test OTLP receiver): `webhook.deliver` continues the `traceparent` the event's delivery trace
 * keeps, and the request carries the span's own `traceparent` when the trace is sampled, never
 * when it is not nor when tracing is off.
 */
describe('webhook.deliver spans and the traceparent header', () => {
  let otlp: OtlpReceiver;
  let tracing: TracingHandle;
  let redis: RedisClient;
  let prefix: string;
  let cleanup: () => Promise<void>;
  let secret: string;
  let receiver: WebhookReceiver;
  let status: number;
  let store: WebhookDeliveryStore;
  let queue: Queue<WebhookJobData>;
  let jobs: WebhookDeliveryJobs;
  let worker: Worker<WebhookJobData, WebhookJobResult>;
  let keys: ReturnType<typeof deriveCrosswalkKeys>;

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
    ({ redis, prefix, cleanup } = await isolatedRedis());
    secret = newSecret();
    status = 204;
    receiver = await startWebhookReceiver({ secret, respond: () => status });
    keys = deriveCrosswalkKeys(generateCrosswalkSecret());
    store = new WebhookDeliveryStore({ redis, prefix, keys, traceTtlS: 3_600 });
    queue = new Queue(WEBHOOK_DELIVERIES, { connection: redis, prefix });
    jobs = new WebhookDeliveryJobs(queue, store);
    worker = new Worker(WEBHOOK_DELIVERIES, null, { connection: redis, prefix, autorun: false });
  });
  afterEach(async () => {
    await worker.close(true);
    await queue.close();
    await receiver.close();
    await cleanup();
  });

  const parts = (traced: boolean): WebhookDeliveryParts => ({
    store,
    jobs,
    client: new WebhookClient({ url: receiver.url }),
    signer: new WebhookSigner(secret),
    deadLetters: new DeadLetterStore({ redis, prefix, keys }),
    logger: captureLogs().logger,
    maxAgeMs: 120_000,
    backoff: { firstDelayMs: 60_000, maxDelayMs: 3_600_000, jitter: 0 },
    parkMs: 300_000,
    now: Date.now,
    random: () => 0.5,
    spans: traced ? new WebhookSpans(tracing.tracer, receiver.url) : undefined,
  });

  /** Hands `event` over (its delivery trace keeping `tp`), takes its job and runs the processor. */
  async function deliver(event: ResultEvent, tp: string | undefined, traced = true) {
    if (tp !== undefined) await redis.hset(deliveryTraceKey(prefix, event.id), 'tp', tp);
    const { job: jobId } = await store.enqueue(event, Date.now());
    await jobs.add(event.id, queryKeyOf(event), jobId);
    const token = randomUUID();
    const job = (await worker.getNextJob(token, { block: false })) as WebhookJob;
    expect(job.data.event_id).toBe(event.id);
    const result = await webhookDeliveryProcessor(parts(traced))(job, token);
    return { result, attempt: receiver.attempts.find((a) => a.webhookId === event.id) };
  }

  it('continues the stored traceparent and sends the span’s own; a 410 is dead-lettered', async () => {
    const traceId = hex(16);
    const parent = hex(8);
    const ok = await deliver(makeEvent(), `00-${traceId}-${parent}-01`);
    expect(ok.result).toMatchObject({ outcome: 'delivered', status: 204 });
    status = 410;
    const gone = await deliver(makeEvent(), `00-${traceId}-${parent}-01`);
    expect(gone.result).toMatchObject({ outcome: 'dead_lettered', code: 'ERR_WEBHOOK_GONE' });
    await tracing.flush();
    const spans = otlp.named('webhook.deliver').filter((s) => s.traceId === traceId);
    expect(spans).toHaveLength(2);
    const [delivered, dead] = spans;
    const { port } = new URL(receiver.url);
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
    expect(otlp.bodies.join('\n')).not.toContain(new URL(receiver.url).pathname);
  });

  it('sends no traceparent when the trace is not sampled, and exports no span', async () => {
    const traceId = hex(16);
    const { result, attempt } = await deliver(makeEvent(), `00-${traceId}-${hex(8)}-00`);
    expect(result).toMatchObject({ outcome: 'delivered' });
    expect(attempt?.verified).toBe(true);
    expect(attempt?.headers).not.toHaveProperty('traceparent');
    await tracing.flush();
    expect(otlp.spans.filter((s) => s.traceId === traceId)).toEqual([]);
  });

  it('with tracing off (no spans) sends no traceparent, whatever the trace keeps', async () => {
    const { result, attempt } = await deliver(makeEvent(), `00-${hex(16)}-${hex(8)}-01`, false);
    expect(result).toMatchObject({ outcome: 'delivered' });
    expect(attempt?.headers).not.toHaveProperty('traceparent');
  });
});
