/**
 * The OpenTelemetry SDK, set up: loaded by `startTracing` with a dynamic import, only when tracing
 * is on, so that a process without an OTLP endpoint never loads (nor pays for) any of it.
 */
import { context, propagation, trace, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import type { Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { AllowlistSpanProcessor } from './allowlist-span-processor.ts';
import type { SamplerSetting, TracingSettings } from './tracing-env.ts';

export function samplerOf({ name, ratio }: SamplerSetting): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

export interface RunningSdk {
  tracer: Tracer;
  bullmqTelemetry: Telemetry;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Builds the provider (sampler, resource, allowlist processor in front of the batch processor and
 * the OTLP/HTTP JSON exporter) and registers it, the AsyncLocalStorage context manager and the W3C
 * trace-context propagator as the API's globals (bullmq-otel uses the globals).
 */
export function startSdk(
  settings: Extract<TracingSettings, { enabled: true }>,
  scope: { name: string; version?: string; attributes: Record<string, string> },
): RunningSdk {
  const exporter = new OTLPTraceExporter({
    url: settings.tracesUrl,
    timeoutMillis: settings.exportTimeoutMillis,
  });
  const provider = new TracerProvider({
    sampler: samplerOf(settings.sampler),
    resource: defaultResource().merge(
      resourceFromAttributes({
        ...settings.resourceAttributes,
        ...scope.attributes,
        'service.name': settings.serviceName,
        ...(scope.version === undefined ? {} : { 'service.version': scope.version }),
      }),
    ),
    spanProcessors: [
      new AllowlistSpanProcessor(new BatchSpanProcessor({ exporter, ...settings.batch })),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    tracer: provider.getTracer(scope.name, scope.version),
    bullmqTelemetry: new BullMQOtel({ tracerName: 'bullmq', version: scope.version }),
    flush: () => provider.forceFlush(),
    async shutdown() {
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}
