import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { context, ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver } from '../../../test/support/otlp-receiver.ts';
import { startTracing, type TracingHandle } from './start-tracing.ts';
import { extractTraceparent, injectTraceparent } from './trace-context.ts';
import { TracingEnvError } from './tracing-env-error.ts';

const START_TRACING = fileURLToPath(new URL('./start-tracing.ts', import.meta.url));

/**
 * Starts tracing in a child process that records every module it resolves, starts and ends a
 * span, and reports whether tracing was on and which OpenTelemetry SDK modules it loaded.
 */
async function modulesLoaded(env: Record<string, string>): Promise<{
  enabled: boolean;
  recording: boolean;
  sdk: string[];
}> {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, ctx, next) { const r = next(specifier, ctx); seen.push(r.url); return r; } });
    const { startTracing } = await import(${JSON.stringify(START_TRACING)});
    const handle = await startTracing({ env: ${JSON.stringify(env)} });
    const span = handle.tracer.startSpan('probe');
    const recording = span.isRecording();
    span.end();
    await handle.shutdown();
    const sdk = seen.filter((url) => /@opentelemetry\\/(?!api\\/)|bullmq-otel|tracing-sdk/.test(url));
    console.log(JSON.stringify({ enabled: handle.enabled, recording, sdk }));
  `;
  const { stdout } = await promisify(execFile)(process.execPath, [
    '--input-type=module',
    '--eval',
    script,
  ]);
  return JSON.parse(stdout) as { enabled: boolean; recording: boolean; sdk: string[] };
}

describe('startTracing, off', () => {
  it('loads no SDK module and hands out the no-op tracer', async () => {
    const off = await modulesLoaded({});
    expect(off).toEqual({ enabled: false, recording: false, sdk: [] });
    // The same probe sees the SDK when tracing is on.
    const receiver = await startOtlpReceiver();
    try {
      const on = await modulesLoaded({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
      expect(on.enabled).toBe(true);
      expect(on.recording).toBe(true);
      expect(on.sdk.some((url) => url.includes('@opentelemetry/sdk-trace'))).toBe(true);
      expect(receiver.named('probe')).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('gives non-recording spans and no BullMQ telemetry', async () => {
    const handle = await startTracing({ env: {} });
    const span = handle.tracer.startSpan('probe');
    expect(handle.enabled).toBe(false);
    expect(handle.bullmqTelemetry).toBeUndefined();
    expect(span.isRecording()).toBe(false);
    expect(injectTraceparent(trace.setSpan(ROOT_CONTEXT, span))).toBeUndefined();
    span.end();
    await handle.shutdown();
  });

  it('shuts down without failing when the collector is down, and says why', async () => {
    const errors: unknown[] = [];
    const handle = await startTracing({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
        OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
      },
      onShutdownError: (err) => errors.push(err),
    });
    handle.tracer.startSpan('lost').end();
    await handle.shutdown();
    expect(errors).toHaveLength(1);
  });

  it('still rejects an invalid variable', async () => {
    await expect(startTracing({ env: { OTEL_TRACES_SAMPLER: 'half' } })).rejects.toBeInstanceOf(
      TracingEnvError,
    );
  });
});

describe('startTracing, on', () => {
  let receiver: OtlpReceiver;
  let handle: TracingHandle | undefined;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterEach(async () => {
    await handle?.shutdown();
    handle = undefined;
    receiver.spans.length = 0;
    receiver.bodies.length = 0;
  });
  afterAll(async () => {
    await receiver.close();
  });

  const start = async (env: Record<string, string> = {}): Promise<TracingHandle> => {
    handle = await startTracing({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...env },
      serviceVersion: '9.9.9',
      role: 'work',
    });
    return handle;
  };

  it('exports spans with parent links, the service name and the resource', async () => {
    const tracing = await start({
      OTEL_SERVICE_NAME: 'cw-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    });
    expect(tracing.enabled).toBe(true);
    tracing.tracer.startActiveSpan('ingest.accept', (parent) => {
      parent.setAttribute('cw.feed', 'adt-main');
      tracing.tracer.startSpan('redis.commit').end();
      parent.end();
    });
    await tracing.flush();
    const spans = await receiver.waitForSpans(2);
    const [parent] = receiver.named('ingest.accept');
    const [child] = receiver.named('redis.commit');
    expect(spans).toHaveLength(2);
    expect(parent?.parentSpanId).toBeUndefined();
    expect(parent?.attributes).toEqual({ 'cw.feed': 'adt-main' });
    expect(child?.traceId).toBe(parent?.traceId);
    expect(child?.parentSpanId).toBe(parent?.spanId);
    expect(parent?.resource).toMatchObject({
      'service.name': 'cw-test',
      'service.version': '9.9.9',
      'cw.role': 'work',
      'deployment.environment.name': 'test',
    });
    expect(parent?.scope).toBe('concordance-worker');
    expect(receiver.rejected).toEqual([]);
  });

  it('honours an incoming traceparent and propagates it on', async () => {
    const tracing = await start();
    const incoming = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    let outgoing: string | undefined;
    context.with(extractTraceparent(incoming), () => {
      tracing.tracer.startActiveSpan('ingest.accept', (span) => {
        outgoing = injectTraceparent();
        span.end();
      });
    });
    await tracing.flush();
    const [span] = await receiver.waitForSpans(1);
    expect(span?.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(span?.parentSpanId).toBe('b7ad6b7169203331');
    expect(outgoing).toBe(`00-${span?.traceId}-${span?.spanId}-01`);
  });

  it('drops planted markers before export', async () => {
    const tracing = await start();
    const span = tracing.tracer.startSpan('cgs.submit', {
      attributes: { 'cw.ccsr_category': 'CIR007', 'patient.name': 'MARKER-A' },
      links: [
        {
          context: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 },
          attributes: { note: 'MARKER-B', 'cw.feed': 'adt' },
        },
      ],
    });
    span.setAttributes({ 'cw.feed': 'MARKER C with spaces', 'bullmq.job.id': 'MARKER-D' });
    span.addEvent('note', { text: 'MARKER-E', 'cw.query.seq': 3 });
    span.recordException(new TypeError('MARKER-F in the message'));
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'MARKER-G' });
    span.end();
    tracing.tracer.startSpan('patient Jane Doe 19700101 MARKER-H').end();
    await tracing.flush();
    await receiver.waitForSpans(2);
    expect(receiver.bodies.join('\n')).not.toContain('MARKER');
    const [guarded] = receiver.named('cgs.submit');
    expect(guarded?.attributes).toEqual({ 'cw.ccsr_category': 'CIR007' });
    expect(guarded?.events).toEqual([
      { name: 'note', attributes: { 'cw.query.seq': 3 } },
      { name: 'exception', attributes: { 'exception.type': 'TypeError' } },
    ]);
    expect(guarded?.statusCode).toBe(SpanStatusCode.ERROR);
    expect(receiver.named('redacted')).toHaveLength(1);
  });

  it('samples nothing with traceidratio at 0 and everything at 1, whatever the parent says', async () => {
    const notSampledParent = extractTraceparent(
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00',
      ROOT_CONTEXT,
    );
    let tracing = await start({
      OTEL_TRACES_SAMPLER: 'traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
    });
    const none = tracing.tracer.startSpan('sampled.out');
    expect(none.isRecording()).toBe(false);
    none.end();
    await tracing.shutdown();

    tracing = await start({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' });
    const child = tracing.tracer.startSpan('sampled.in', {}, notSampledParent);
    expect(child.isRecording()).toBe(true);
    child.end();
    await tracing.flush();
    await receiver.waitForSpans(1);
    expect(receiver.spans.map((s) => s.name)).toEqual(['sampled.in']);
  });

  it('follows the parent with parentbased_* and samples roots by the root sampler', async () => {
    const parent = (flags: string) =>
      extractTraceparent(`00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-${flags}`);
    const tracing = await start({
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
    });
    const root = tracing.tracer.startSpan('root.out');
    const sampledChild = tracing.tracer.startSpan('child.in', {}, parent('01'));
    const unsampledChild = tracing.tracer.startSpan('child.out', {}, parent('00'));
    expect([root, sampledChild, unsampledChild].map((s) => s.isRecording())).toEqual([
      false,
      true,
      false,
    ]);
    for (const span of [root, sampledChild, unsampledChild]) span.end();
    await tracing.flush();
    await receiver.waitForSpans(1);
    expect(receiver.spans.map((s) => s.name)).toEqual(['child.in']);
  });

  it('samples roots with parentbased_always_on and not with parentbased_always_off', async () => {
    let tracing = await start({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' });
    expect(tracing.tracer.startSpan('off').isRecording()).toBe(false);
    expect(
      tracing.tracer
        .startSpan(
          'in',
          {},
          extractTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
        )
        .isRecording(),
    ).toBe(true);
    await tracing.shutdown();
    tracing = await start({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' });
    expect(tracing.tracer.startSpan('on').isRecording()).toBe(true);
  });
});
