import { trace, type Tracer } from '@opentelemetry/api';
import type { Telemetry } from 'bullmq';
import { readTracingEnv, type TracingEnv } from './tracing-env.ts';

export interface TracingHandle {
  /** True when spans are exported (an OTLP endpoint is set). */
  readonly enabled: boolean;
  /** Where spans are started; the API's no-op tracer when tracing is off. */
  readonly tracer: Tracer;
  /**
   * The `telemetry` option of BullMQ's Queue and Worker (bullmq-otel), undefined when tracing is
   * off so that BullMQ does no tracing work at all.
   */
  readonly bullmqTelemetry: Telemetry | undefined;
  /** Exports the spans ended so far (tests; before a planned exit); rejects when that fails. */
  flush(): Promise<void>;
  /** Exports what is left and stops; the API's globals are reset. */
  shutdown(): Promise<void>;
}

export interface StartTracingOptions {
  /** @defaultValue process.env */
  env?: TracingEnv;
  /** service.name unless OTEL_SERVICE_NAME says otherwise. @defaultValue 'concordance-worker' */
  serviceName?: string;
  /** service.version and the tracer's version. */
  serviceVersion?: string;
  /** The process's role (`ingest`, `work`), the resource attribute `cw.role`. */
  role?: string;
  /**
   * Told when the spans left at shutdown could not be exported (the collector is down): shutdown
   * itself never fails for that. Export failures while running go to the API's diag logger.
   */
  onShutdownError?: (err: unknown) => void;
}

const TRACER_NAME = 'concordance-worker';

/**
 * The handle of a process where tracing is off: the API's no-op tracer, no BullMQ telemetry,
 * nothing to flush. What {@link startTracing} answers without an OTLP endpoint, and what a part
 * built without a started handle (a test's `App`) gets.
 */
export function tracingOff(): TracingHandle {
  return {
    enabled: false,
    tracer: trace.getTracer(TRACER_NAME),
    bullmqTelemetry: undefined,
    flush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

/**
 * Starts tracing as the standard OpenTelemetry environment variables say: on when
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set, off otherwise. Off,
 * no SDK module is loaded and the tracer is the API's no-op one. On, the SDK is loaded, spans go
 * through the attribute allowlist to the OTLP/HTTP (JSON) exporter, and the SDK's provider,
 * context manager and W3C propagator are the API's globals. Call once per process.
 * @throws TracingEnvError when a variable holds an invalid value (whether tracing is on or off)
 */
export async function startTracing(options: StartTracingOptions = {}): Promise<TracingHandle> {
  const settings = readTracingEnv(options.env ?? process.env, options.serviceName ?? TRACER_NAME);
  if (!settings.enabled) return tracingOff();
  const { startSdk } = await import('./tracing-sdk.ts');
  const sdk = startSdk(settings, {
    name: TRACER_NAME,
    version: options.serviceVersion,
    attributes: options.role === undefined ? {} : { 'cw.role': options.role },
  });
  return {
    enabled: true,
    tracer: sdk.tracer,
    bullmqTelemetry: sdk.bullmqTelemetry,
    flush: () => sdk.flush(),
    async shutdown() {
      try {
        await sdk.shutdown();
      } catch (err) {
        options.onShutdownError?.(err);
      }
    },
  };
}
