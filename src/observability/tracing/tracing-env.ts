import { z } from 'zod';
import { TracingEnvError } from './tracing-env-error.ts';

/**
 * The standard OpenTelemetry environment variables tracing reads, validated. Names and meanings
 * are the specification's ("Environment Variable Specification"); an empty value counts as unset,
 * as the specification says. Anything else is read by nobody: in particular OTEL_PROPAGATORS
 * (only W3C `traceparent` is carried, never baggage, which could carry anything).
 */

export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

export interface SamplerSetting {
  name: SamplerName;
  /** The ratio of `traceidratio` and `parentbased_traceidratio` (OTEL_TRACES_SAMPLER_ARG). */
  ratio: number;
}

export interface BatchSetting {
  scheduledDelayMillis: number;
  maxQueueSize: number;
  maxExportBatchSize: number;
  exportTimeoutMillis: number;
}

export type TracingSettings =
  | { enabled: false }
  | {
      enabled: true;
      /** Where spans go: the full OTLP/HTTP traces URL (`…/v1/traces`). */
      tracesUrl: string;
      /** How long one export may take (OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT), in ms. */
      exportTimeoutMillis: number;
      /** OTEL_SERVICE_NAME, else `service.name` of OTEL_RESOURCE_ATTRIBUTES, else the default. */
      serviceName: string;
      /** OTEL_RESOURCE_ATTRIBUTES, decoded (without `service.name`). */
      resourceAttributes: Record<string, string>;
      sampler: SamplerSetting;
      batch: BatchSetting;
    };

export type TracingEnv = Readonly<Record<string, string | undefined>>;

const httpUrl = z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' });
const integer = (min: number) =>
  z
    .string()
    .regex(/^\d+$/, 'a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(2_147_483_647));

/** One variable's schema, and how to read it. */
function read<T>(env: TracingEnv, variable: string, schema: z.ZodType<T>): T | undefined {
  const raw = env[variable]?.trim();
  if (raw === undefined || raw === '') return undefined;
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const problem = parsed.error.issues.map((issue) => issue.message).join('; ');
  throw new TracingEnvError(variable, `invalid value (${problem})`, { cause: parsed.error });
}

/**
 * `key1=value1,key2=value2`, values percent-encoded (the W3C Baggage octet rules): the format of
 * OTEL_RESOURCE_ATTRIBUTES and of the exporter's headers. Errors never repeat a value (a header may
 * be a token).
 */
function keyValueList(env: TracingEnv, variable: string): Record<string, string> {
  const raw = env[variable]?.trim();
  if (raw === undefined || raw === '') return {};
  const out: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    const at = pair.indexOf('=');
    const key = pair.slice(0, at).trim();
    if (at < 1 || !/^[\w.-]{1,255}$/.test(key)) {
      throw new TracingEnvError(
        variable,
        'expected key=value pairs separated by commas (keys of letters, digits, "_", "." and "-")',
      );
    }
    try {
      out[key] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch (cause) {
      throw new TracingEnvError(variable, `the value of ${key} is not valid percent-encoding`, {
        cause,
      });
    }
  }
  return out;
}

/** The traces URL: the signal's own endpoint as it is, else the base endpoint plus `v1/traces`. */
function tracesUrl(env: TracingEnv): string | undefined {
  const own = read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', httpUrl);
  if (own !== undefined) return own;
  const base = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', httpUrl);
  if (base === undefined) return undefined;
  return `${base.endsWith('/') ? base : `${base}/`}v1/traces`;
}

function sampler(env: TracingEnv): SamplerSetting {
  const name =
    read(
      env,
      'OTEL_TRACES_SAMPLER',
      z.enum(SAMPLERS, { error: `one of ${SAMPLERS.join(', ')}` }),
    ) ?? 'parentbased_always_on';
  const ratio =
    read(
      env,
      'OTEL_TRACES_SAMPLER_ARG',
      z
        .string()
        .regex(/^(?:\d+(?:\.\d*)?|\.\d+)$/, 'a number from 0 to 1')
        .transform(Number)
        .pipe(z.number().min(0, 'a number from 0 to 1').max(1, 'a number from 0 to 1')),
    ) ?? 1;
  return { name, ratio };
}

function batch(env: TracingEnv): BatchSetting {
  const setting = {
    scheduledDelayMillis: read(env, 'OTEL_BSP_SCHEDULE_DELAY', integer(0)) ?? 5_000,
    maxQueueSize: read(env, 'OTEL_BSP_MAX_QUEUE_SIZE', integer(1)) ?? 2_048,
    maxExportBatchSize: read(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', integer(1)) ?? 512,
    exportTimeoutMillis: read(env, 'OTEL_BSP_EXPORT_TIMEOUT', integer(1)) ?? 30_000,
  };
  if (setting.maxExportBatchSize > setting.maxQueueSize) {
    throw new TracingEnvError(
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
      'must not be larger than OTEL_BSP_MAX_QUEUE_SIZE',
    );
  }
  return setting;
}

/**
 * Reads the tracing settings from `env`. Tracing is on when an OTLP endpoint is set, unless
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. Every variable is validated even when
 * tracing ends up off, so that a typo fails the start rather than the day tracing is turned on.
 * @throws TracingEnvError naming the variable
 */
export function readTracingEnv(env: TracingEnv, defaultServiceName: string): TracingSettings {
  const disabled = read(
    env,
    'OTEL_SDK_DISABLED',
    z.enum(['true', 'false'], { error: 'true or false' }),
  );
  const exporter = read(
    env,
    'OTEL_TRACES_EXPORTER',
    z.enum(['otlp', 'none'], { error: 'otlp or none (the only exporters of this product)' }),
  );
  for (const variable of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    read(
      env,
      variable,
      z.literal('http/json', { error: 'http/json (the only protocol of this product)' }),
    );
  }
  const url = tracesUrl(env);
  const attributes = keyValueList(env, 'OTEL_RESOURCE_ATTRIBUTES');
  // Read by the exporter itself from the process's environment; checked here so that a bad value
  // fails the start instead of being ignored with a warning.
  keyValueList(env, 'OTEL_EXPORTER_OTLP_HEADERS');
  keyValueList(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS');
  for (const variable of [
    'OTEL_EXPORTER_OTLP_COMPRESSION',
    'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION',
  ]) {
    read(env, variable, z.enum(['gzip', 'none'], { error: 'gzip or none' }));
  }
  const serviceName =
    read(env, 'OTEL_SERVICE_NAME', z.string().max(255, 'at most 255 characters')) ??
    attributes['service.name'] ??
    defaultServiceName;
  delete attributes['service.name'];
  const exportTimeoutMillis =
    read(env, 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', integer(1)) ??
    read(env, 'OTEL_EXPORTER_OTLP_TIMEOUT', integer(1)) ??
    10_000;
  const samplerSetting = sampler(env);
  const batchSetting = batch(env);
  if (url === undefined || disabled === 'true' || exporter === 'none') return { enabled: false };
  return {
    enabled: true,
    tracesUrl: url,
    exportTimeoutMillis,
    serviceName,
    resourceAttributes: attributes,
    sampler: samplerSetting,
    batch: batchSetting,
  };
}
