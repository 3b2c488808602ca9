import { describe, expect, it } from 'vitest';
import { readTracingEnv, type TracingEnv } from './tracing-env.ts';
import { TracingEnvError } from './tracing-env-error.ts';

const read = (env: TracingEnv) => readTracingEnv(env, 'concordance-worker');

function errorOf(env: TracingEnv): TracingEnvError {
  try {
    read(env);
  } catch (err) {
    if (err instanceof TracingEnvError) return err;
    throw err;
  }
  throw new Error('no error');
}

describe('readTracingEnv', () => {
  it('is off without an endpoint, and off when disabled or the exporter is none', () => {
    expect(read({})).toEqual({ enabled: false });
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toEqual({ enabled: false });
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(read(on).enabled).toBe(true);
    expect(read({ ...on, OTEL_SDK_DISABLED: 'true' })).toEqual({ enabled: false });
    expect(read({ ...on, OTEL_TRACES_EXPORTER: 'none' })).toEqual({ enabled: false });
  });

  it('appends v1/traces to the base endpoint, takes the traces endpoint as it is', () => {
    const base = read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' });
    expect(base.enabled && base.tracesUrl).toBe('http://collector:4318/v1/traces');
    const slash = read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector/otlp/' });
    expect(slash.enabled && slash.tracesUrl).toBe('https://collector/otlp/v1/traces');
    const own = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:9999/custom',
    });
    expect(own.enabled && own.tracesUrl).toBe('http://collector:9999/custom');
  });

  it('reads the service name, resource attributes, sampler and batch settings', () => {
    const settings = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_RESOURCE_ATTRIBUTES:
        'deployment.environment.name=prod,service.name=from-attrs,team=a%20b',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2000',
    });
    expect(settings).toMatchObject({
      enabled: true,
      serviceName: 'from-attrs',
      exportTimeoutMillis: 2000,
      resourceAttributes: { 'deployment.environment.name': 'prod', team: 'a b' },
      sampler: { name: 'parentbased_traceidratio', ratio: 0.1 },
      batch: { scheduledDelayMillis: 200, maxQueueSize: 2048, maxExportBatchSize: 512 },
    });
    const named = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_SERVICE_NAME: 'cw-ingest',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs',
    });
    expect(named.enabled && named.serviceName).toBe('cw-ingest');
    const plain = read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' });
    expect(plain).toMatchObject({
      serviceName: 'concordance-worker',
      sampler: { name: 'parentbased_always_on', ratio: 1 },
    });
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'ftp://collector/'],
    ['OTEL_TRACES_SAMPLER', 'sometimes'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
    ['OTEL_TRACES_SAMPLER_ARG', 'half'],
    ['OTEL_SDK_DISABLED', 'yes'],
    ['OTEL_TRACES_EXPORTER', 'zipkin'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'http/protobuf'],
    ['OTEL_RESOURCE_ATTRIBUTES', 'novalue'],
    ['OTEL_RESOURCE_ATTRIBUTES', 'k=%zz'],
    ['OTEL_BSP_SCHEDULE_DELAY', '-5'],
    ['OTEL_BSP_MAX_QUEUE_SIZE', '0'],
    ['OTEL_EXPORTER_OTLP_TIMEOUT', '10s'],
    ['OTEL_EXPORTER_OTLP_HEADERS', 'Bearer abc'],
    ['OTEL_EXPORTER_OTLP_TRACES_HEADERS', '=x'],
    ['OTEL_EXPORTER_OTLP_COMPRESSION', 'brotli'],
  ])('rejects %s=%s with ERR_TRACING_ENV naming the variable, even when off', (variable, value) => {
    const err = errorOf({ [variable]: value });
    expect(err.code).toBe('ERR_TRACING_ENV');
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable}: `)).toBe(true);
  });

  it('never repeats a header value in its message', () => {
    const err = errorOf({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization=%zzSECRET' });
    expect(err.message).not.toContain('SECRET');
  });

  it('rejects a batch larger than the queue', () => {
    const err = errorOf({ OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '20' });
    expect(err.variable).toBe('OTEL_BSP_MAX_EXPORT_BATCH_SIZE');
  });
});
