import { once } from 'node:events';
import { SpanKind } from '@opentelemetry/api';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver } from '../../../test/support/otlp-receiver.ts';
import { isolatedRedis, testRedisClient } from '../../../test/support/redis.ts';
import { startTracing, type TracingHandle } from './start-tracing.ts';

/**
 * bullmq-otel with the installed BullMQ: the producer's context travels with the job, the
 * worker's span continues the trace, and only allowlisted attributes (no job id, no job data)
 * leave.
 */
describe('BullMQ telemetry (bullmq-otel)', () => {
  let receiver: OtlpReceiver;
  let tracing: TracingHandle;
  let env: Awaited<ReturnType<typeof isolatedRedis>>;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracing = await startTracing({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
    env = await isolatedRedis();
  });
  afterAll(async () => {
    await tracing.shutdown();
    await receiver.close();
    await env.cleanup();
  });

  it('continues the producer trace in the worker and exports no job id or data', async () => {
    const options = {
      connection: env.redis,
      prefix: env.prefix,
      telemetry: tracing.bullmqTelemetry,
    };
    const queue = new Queue('otel-probe', options);
    const workerRedis = testRedisClient();
    const worker = new Worker('otel-probe', () => Promise.resolve('MARKER-RESULT'), {
      ...options,
      connection: workerRedis,
    });
    try {
      const completed = once(worker, 'completed');
      await tracing.tracer.startActiveSpan('ingest.accept', async (span) => {
        await queue.add('query', { patient: 'MARKER-DATA' }, { jobId: 'MARKER-JOBID' });
        span.end();
      });
      await completed;
    } finally {
      await worker.close();
      await queue.close();
      await workerRedis.quit();
    }
    await tracing.flush();
    const spans = await receiver.waitForSpans(3);
    const [root] = receiver.named('ingest.accept');
    const producer = spans.find((s) => s.kind === SpanKind.PRODUCER + 1);
    const consumer = spans.find((s) => s.kind === SpanKind.CONSUMER + 1);
    expect(producer?.name).toBe('add otel-probe.query');
    expect(producer?.parentSpanId).toBe(root?.spanId);
    expect(consumer?.traceId).toBe(root?.traceId);
    expect(consumer?.attributes).toMatchObject({ 'bullmq.queue.name': 'otel-probe' });
    expect(receiver.bodies.join('\n')).not.toContain('MARKER');
  });
});
