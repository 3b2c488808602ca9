import { randomBytes } from 'node:crypto';
import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver } from '../../test/support/otlp-receiver.ts';
import { startTracing, type TracingHandle } from '../observability/tracing/start-tracing.ts';
import { noteServiceAnswer, QuerySpans } from './query-spans.ts';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

class PlantedError extends Error {
  readonly code = 'ERR_SERVICE_UNAVAILABLE';
  readonly status = 503;
}

/** The `cgs.submit` and `cgs.poll` spans, exported to an in-test OTLP receiver. */
describe('QuerySpans', () => {
  let otlp: OtlpReceiver;
  let tracing: TracingHandle;
  let spans: QuerySpans;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    tracing = await startTracing({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
    });
    spans = new QuerySpans({
      tracer: tracing.tracer,
      partition: 2,
      service: { host: 'cgs.example.org:8443', scheme: 'https' },
    });
  });
  afterAll(async () => {
    await tracing.shutdown();
    await otlp.close();
  });

  const spanOf = async (name: string, traceId: string) => {
    await tracing.flush();
    return otlp.named(name).filter((s) => s.traceId === traceId);
  };

  it('cgs.submit continues the message’s traceparent, links the job’s span, hands its own on', async () => {
    const traceId = hex(16);
    const ingest = hex(8);
    let own: string | undefined;
    const consumer = await tracing.tracer.startActiveSpan('process probe', async (job) => {
      await spans.submit(
        { ccsrCategory: 'END002', seq: 3 },
        `00-${traceId}-${ingest}-01`,
        (span, traceparent) => {
          own = traceparent;
          noteServiceAnswer(202);
          span.setAttribute('cw.outcome', 'submitted');
          return Promise.resolve();
        },
      );
      job.end();
      return job.spanContext();
    });
    const [submit] = await spanOf('cgs.submit', traceId);
    expect(submit).toMatchObject({ parentSpanId: ingest, kind: 3 });
    expect(submit?.attributes).toEqual({
      'cw.partition': 2,
      'cw.ccsr_category': 'END002',
      'cw.query.seq': 3,
      'http.request.method': 'POST',
      'http.response.status_code': 202,
      'server.address': 'cgs.example.org',
      'server.port': 8443,
      'url.scheme': 'https',
      'cw.outcome': 'submitted',
    });
    expect(own).toBe(`00-${traceId}-${submit?.spanId}-01`);
    const links = otlp.bodies
      .map((b) => JSON.parse(b) as { resourceSpans: { scopeSpans: { spans: unknown[] }[] }[] })
      .flatMap((r) => r.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)))
      .map((s) => s as { spanId: string; links?: { traceId: string; spanId: string }[] })
      .find((s) => s.spanId === submit?.spanId)?.links;
    expect(links).toEqual([
      expect.objectContaining({ traceId: consumer.traceId, spanId: consumer.spanId }),
    ]);
  });

  it('cgs.submit without a traceparent is a child of the active span, unlinked', async () => {
    const job = await tracing.tracer.startActiveSpan('process probe', async (span) => {
      await spans.submit({ ccsrCategory: 'END002', seq: 1 }, undefined, () => Promise.resolve());
      span.end();
      return span.spanContext();
    });
    const [submit] = await spanOf('cgs.submit', job.traceId);
    expect(submit?.parentSpanId).toBe(job.spanId);
  });

  it('cgs.poll: a child of the submission, its attempt counted; an error leaves only its code', async () => {
    const traceId = hex(16);
    const submit = hex(8);
    const failed = spans.poll(
      { ccsrCategory: 'END002', seq: 3 },
      `00-${traceId}-${submit}-01`,
      4,
      () => Promise.reject(new PlantedError('planted message MRN-55120')),
    );
    await expect(failed).rejects.toThrow(PlantedError);
    const [poll] = await spanOf('cgs.poll', traceId);
    expect(poll).toMatchObject({ parentSpanId: submit, kind: 3, statusCode: 2 });
    expect(poll?.attributes).toMatchObject({
      'cw.poll.attempt': 4,
      'http.request.method': 'GET',
      'http.response.status_code': 503,
      'cw.error.code': 'ERR_SERVICE_UNAVAILABLE',
    });
    expect(otlp.bodies.join('\n')).not.toContain('MRN-55120');
  });

  it('follows the submission’s sampling decision: an unsampled one exports no poll', async () => {
    const traceId = hex(16);
    let ran = false;
    await spans.poll({ ccsrCategory: 'END002', seq: 1 }, `00-${traceId}-${hex(8)}-00`, 1, () => {
      ran = true;
      return Promise.resolve();
    });
    expect(ran).toBe(true);
    expect(await spanOf('cgs.poll', traceId)).toEqual([]);
  });

  it('starts no cgs.submit under an unsampled job span: hands that span’s traceparent on', async () => {
    const traceId = hex(16);
    const consumer = trace.wrapSpanContext({
      traceId,
      spanId: hex(8),
      traceFlags: TraceFlags.NONE,
    });
    const handed = await context.with(trace.setSpan(ROOT_CONTEXT, consumer), () =>
      spans.submit({ ccsrCategory: 'END002', seq: 2 }, undefined, (span, traceparent) => {
        expect(span.isRecording()).toBe(false);
        return Promise.resolve(traceparent);
      }),
    );
    expect(handed).toBe(`00-${traceId}-${consumer.spanContext().spanId}-00`);
    expect(await spanOf('cgs.submit', traceId)).toEqual([]);
  });

  it('noteServiceAnswer touches only a service call’s span', async () => {
    const other = await tracing.tracer.startActiveSpan('POST /v1/record-updates', (span) => {
      noteServiceAnswer(201);
      span.end();
      return span.spanContext();
    });
    const [server] = await spanOf('POST /v1/record-updates', other.traceId);
    expect(server?.attributes).not.toHaveProperty('http.response.status_code');
  });
});
