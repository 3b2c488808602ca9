import { ROOT_CONTEXT, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { markSpanFailed } from '../../observability/tracing/span-failure.ts';
import type { Hl7v2Answer } from './hl7v2-handler.ts';

/** The span of one MLLP frame (docs/opentelemetry.md): a constant name. */
export const MLLP_SPAN = 'hl7v2.mllp.message';

/**
 * Handles one MLLP frame inside its own server span, the active span while it is handled (so that
 * the `redis.commit` span is its child and the receipt keeps its trace id). MLLP carries no
 * `traceparent`: each frame starts a trace of its own (a root span). Attributes: `cw.feed`,
 * `cw.outcome`, `cw.batch.size` (the messages of a batch frame). Without a tracer (tracing off) it
 * only handles the frame.
 */
export async function inMllpSpan(
  tracer: Tracer | undefined,
  handle: () => Promise<Hl7v2Answer>,
): Promise<Hl7v2Answer> {
  if (tracer === undefined) return handle();
  return tracer.startActiveSpan(
    MLLP_SPAN,
    { kind: SpanKind.SERVER, attributes: { 'cw.feed': 'hl7v2-mllp' } },
    ROOT_CONTEXT,
    async (span) => {
      try {
        const answer = await handle();
        span.setAttribute('cw.outcome', answer.outcome);
        if (answer.messages > 1) span.setAttribute('cw.batch.size', answer.messages);
        if (answer.outcome === 'unavailable') span.setStatus({ code: SpanStatusCode.ERROR });
        return answer;
      } catch (err) {
        markSpanFailed(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
}
