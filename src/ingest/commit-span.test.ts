import { randomBytes } from 'node:crypto';
import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver } from '../../test/support/otlp-receiver.ts';
import { startTracing, type TracingHandle } from '../observability/tracing/start-tracing.ts';
import { COMMIT_SPAN, inCommitSpan } from './commit-span.ts';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** The `redis.commit` span, exported to an in-test OTLP receiver. */
describe('inCommitSpan', () => {
  let otlp: OtlpReceiver;
  let tracing: TracingHandle;

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

  const commitsOf = async (traceId: string) => {
    await tracing.flush();
    return otlp.named(COMMIT_SPAN).filter((s) => s.traceId === traceId);
  };
  const commit = () =>
    inCommitSpan(
      tracing.tracer,
      { operation: 'commit', partition: 1 },
      () => {
        const span = trace.getActiveSpan();
        return Promise.resolve({ span, recording: span?.isRecording() });
      },
      () => 'accepted',
    );

  it('is a child of a sampled request span, with its attributes', async () => {
    const { traceId, spanId } = await tracing.tracer.startActiveSpan(
      'POST /probe',
      async (span) => {
        const active = await commit();
        expect(active.span).not.toBe(span);
        expect(active.recording).toBe(true);
        span.end();
        return span.spanContext();
      },
    );
    const [span] = await commitsOf(traceId);
    expect(span).toMatchObject({ parentSpanId: spanId });
    expect(span?.attributes).toMatchObject({
      'db.system.name': 'redis',
      'db.operation.name': 'commit',
      'cw.partition': 1,
      'cw.outcome': 'accepted',
    });
  });

  it('starts no span under an unsampled request span: the commit runs under that span', async () => {
    const traceId = hex(16);
    const request = trace.wrapSpanContext({ traceId, spanId: hex(8), traceFlags: TraceFlags.NONE });
    const active = await context.with(trace.setSpan(ROOT_CONTEXT, request), commit);
    expect(active.span).toBe(request);
    expect(await commitsOf(traceId)).toEqual([]);
  });
});
