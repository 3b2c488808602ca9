import { SpanStatusCode, type Span } from '@opentelemetry/api';

/**
 * Marks `span` as failed by the thrown `err`: its class name as `error.type` (never its message,
 * which may carry anything) and the ERROR status, without a status message.
 */
export function markSpanFailed(span: Span, err: unknown): void {
  span.setAttribute('error.type', err instanceof Error ? err.name : 'unknown');
  span.setStatus({ code: SpanStatusCode.ERROR });
}
