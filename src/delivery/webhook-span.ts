import {
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import {
  extractTraceparent,
  injectTraceparent,
  sampledTraceId,
} from '../observability/tracing/trace-context.ts';

/**
 * The `webhook.deliver` client span of one webhook attempt (docs/opentelemetry.md), child of the
 * `traceparent` the event's delivery trace keeps (its query's submission), so that the delivery
 * joins the message's trace; the request carries the span's own `traceparent` when the trace is
 * sampled. Only allowlisted attributes: the endpoint's host, port and scheme (never its path), the
 * attempt's number, its outcome and status.
 */
export class WebhookSpans {
  readonly #tracer: Tracer;
  readonly #common: Attributes;

  /** `url`: the hospital's endpoint (`delivery.webhook.url`). */
  constructor(tracer: Tracer, url: string) {
    this.#tracer = tracer;
    const { protocol, hostname, port } = new URL(url);
    const scheme = protocol.replace(/:$/, '');
    this.#common = {
      'http.request.method': 'POST',
      'server.address': hostname,
      ...(port === '' ? {} : { 'server.port': Number(port) }),
      ...(scheme === 'http' || scheme === 'https' ? { 'url.scheme': scheme } : {}),
    };
  }

  /**
   * Runs `fn` (the attempt) under a `webhook.deliver` span; `fn` gets the span and the
   * `traceparent` to send (undefined when the trace is not sampled).
   */
  attempt<T>(
    parent: string | undefined,
    attempt: number,
    fn: (span: Span, traceparent: string | undefined) => Promise<T>,
  ): Promise<T> {
    return this.#tracer.startActiveSpan(
      'webhook.deliver',
      { kind: SpanKind.CLIENT },
      extractTraceparent(parent),
      async (span) => {
        // Attributes only on a span that records (most are unsampled).
        if (span.isRecording()) {
          span.setAttributes({ ...this.#common, 'cw.delivery.attempt': attempt });
        }
        try {
          return await fn(span, sampledTraceId() === null ? undefined : injectTraceparent());
        } catch (err) {
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }
}

/** Notes what an attempt came to on its span. */
export function endAttempt(
  span: Span,
  end: { outcome: string; status?: number | undefined; errorCode?: string | undefined },
): void {
  span.setAttribute('cw.outcome', end.outcome);
  if (end.status !== undefined) span.setAttribute('http.response.status_code', end.status);
  if (end.errorCode !== undefined) {
    span.setAttribute('cw.error.code', end.errorCode);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
}
