import { afterAll, beforeAll } from 'vitest';
import { startTracing, type TracingHandle } from '../../src/observability/tracing/start-tracing.ts';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.ts';

/** The suite's tracing and the in-test OTLP receiver it exports to (set once `beforeAll` ran). */
export interface OtlpTracing {
  otlp: OtlpReceiver;
  tracing: TracingHandle;
}

/**
 * Registers the suite's `beforeAll` and `afterAll`: an OTLP receiver, and tracing exporting to it
 * (`parentbased_always_on`), shut down after the suite. Read the fields inside tests and hooks.
 */
export function otlpTracingForSuite(): OtlpTracing {
  const suite = {} as OtlpTracing;
  beforeAll(async () => {
    suite.otlp = await startOtlpReceiver();
    suite.tracing = await startTracing({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: suite.otlp.url,
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      },
    });
  });
  afterAll(async () => {
    await suite.tracing.shutdown();
    await suite.otlp.close();
  });
  return suite;
}
