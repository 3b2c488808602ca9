import { SpanKind, type Tracer } from '@opentelemetry/api';
import {
  injectTraceparent,
  sampledTraceId,
  unsampledLocalSpan,
} from '../observability/tracing/trace-context.ts';
import { markSpanFailed } from '../observability/tracing/span-failure.ts';
import type { KeySpace } from '../queues/partitions.ts';

/** The span around a commit script's call (docs/opentelemetry.md): a constant name. */
export const COMMIT_SPAN = 'redis.commit';

/** The partition of a patient's keys (0 with a single prefix). */
export function partitionOf(space: KeySpace, patientServiceId: string): number {
  return typeof space === 'string' ? 0 : space.indexOf(patientServiceId);
}

/**
 * The `traceparent` of the message's active ingest span, to keep with the queries it opens (the
 * query trace's `tp`): only when tracing is on and the trace sampled, else '' (nothing is kept).
 */
export function queryTraceparent(tracer: Tracer | undefined): string {
  if (tracer === undefined || sampledTraceId() === null) return '';
  return injectTraceparent() ?? '';
}

/**
 * Runs `call` (one commit script call) inside a `redis.commit` internal span, a child of the
 * active span, with `db.system.name`, `db.operation.name` (the script), `cw.partition` and the
 * outcome (`cw.outcome`: the script's answer). Without a tracer (tracing off) it only runs `call`.
 */
export async function inCommitSpan<T>(
  tracer: Tracer | undefined,
  at: { operation: string; partition: number },
  call: () => Promise<T>,
  outcomeOf: (result: T) => string,
): Promise<T> {
  // Off, or under an unsampled request span (most requests): no span would be recorded.
  if (tracer === undefined || unsampledLocalSpan() !== undefined) return call();
  return tracer.startActiveSpan(COMMIT_SPAN, { kind: SpanKind.INTERNAL }, async (span) => {
    // Attributes only on a span that records (most are unsampled).
    const recording = span.isRecording();
    if (recording) {
      span.setAttributes({
        'db.system.name': 'redis',
        'db.operation.name': at.operation,
        'cw.partition': at.partition,
      });
    }
    try {
      const result = await call();
      if (recording) span.setAttribute('cw.outcome', outcomeOf(result));
      return result;
    } catch (err) {
      markSpanFailed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}
