import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace';
import { guardAttributes, guardName } from './span-attribute-allowlist.ts';

/**
 * The copy of an ended span that may leave the process: allowlisted attributes (on the span, its
 * events and its links), guarded names, the status code without its message. Times, ids, kind,
 * resource and scope are kept as they are.
 */
export function guardSpan(span: ReadableSpan): ReadableSpan {
  const own = guardAttributes(span.attributes);
  return {
    name: guardName(span.name),
    kind: span.kind,
    spanContext: () => span.spanContext(),
    parentSpanContext: span.parentSpanContext,
    startTime: span.startTime,
    endTime: span.endTime,
    duration: span.duration,
    ended: span.ended,
    // A status message is free text (often an error's message): only the code leaves.
    status: { code: span.status.code },
    attributes: own.attributes,
    links: span.links.map((link) => ({
      context: link.context,
      attributes: guardAttributes(link.attributes).attributes,
    })),
    events: span.events.map((event) => {
      const guarded = guardAttributes(event.attributes);
      return {
        time: event.time,
        name: guardName(event.name),
        attributes: guarded.attributes,
        droppedAttributesCount: (event.droppedAttributesCount ?? 0) + guarded.dropped,
      };
    }),
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: span.droppedAttributesCount + own.dropped,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}

/**
 * Wraps the processor that exports (the batch span processor): every ended span reaches it only
 * as its guarded copy, so no attribute outside the allowlist can be exported, whoever set it (our
 * code, bullmq-otel, a future instrumentation).
 */
export class AllowlistSpanProcessor implements SpanProcessor {
  readonly #next: SpanProcessor;

  constructor(next: SpanProcessor) {
    this.#next = next;
  }

  onStart(span: Span, parentContext: Context): void {
    this.#next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    this.#next.onEnd(guardSpan(span));
  }

  forceFlush(): Promise<void> {
    return this.#next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.#next.shutdown();
  }
}
