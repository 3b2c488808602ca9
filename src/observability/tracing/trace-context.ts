import {
  context as contextApi,
  isSpanContextValid,
  trace,
  TraceFlags,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { z } from 'zod';

/**
 * A trace context as one W3C `traceparent` string (version 00): what the poll set keeps in Redis
 * next to a query, what the webhook's request carries, what the engine may send with a message.
 * Only the API is used, so this works (and costs next to nothing) with tracing off too: an incoming
 * `traceparent` then passes through unchanged to what this process sends on.
 */

/** `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`, lower case, ids not all zero. */
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
export const traceparentSchema = z.string().regex(TRACEPARENT);

/** The `traceparent` of the span active in `ctx`, or undefined when it has none (tracing off). */
export function injectTraceparent(ctx: Context = contextApi.active()): string | undefined {
  const spanContext = trace.getSpanContext(ctx);
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return undefined;
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/**
 * `base` with the remote parent `traceparent` names (a value that is not a valid `traceparent`,
 * or none, leaves `base` as it is: a bad header never fails a request). Only the sampled flag of
 * the flags is kept.
 */
export function extractTraceparent(
  traceparent: string | undefined | null,
  base: Context = contextApi.active(),
): Context {
  // On every request, job and poll: a plain pattern test (what traceparentSchema checks), no
  // zod parse, whose failure (no header, the common case) builds an error.
  if (typeof traceparent !== 'string' || traceparent === '') return base;
  const value = traceparent.trim().toLowerCase();
  if (!TRACEPARENT.test(value)) return base;
  return trace.setSpanContext(base, {
    traceId: value.slice(3, 35),
    spanId: value.slice(36, 52),
    traceFlags: Number.parseInt(value.slice(53, 55), 16) & TraceFlags.SAMPLED,
    isRemote: true,
  });
}

/**
 * The trace id of the span active in `ctx` when that trace is sampled (exported), else null: what
 * the message trace's receipt keeps as `trace_id`, to find the trace in the tracing backend.
 */
export function sampledTraceId(ctx: Context = contextApi.active()): string | null {
  const spanContext = trace.getSpanContext(ctx);
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return null;
  return (spanContext.traceFlags & TraceFlags.SAMPLED) === 0 ? null : spanContext.traceId;
}

/**
 * The span active in `ctx` when it is a local span that is not recorded (its trace not sampled),
 * else undefined. A child of such a span is never sampled by any sampler OTEL_TRACES_SAMPLER can
 * name (the parent-based ones follow the parent; `traceidratio` decides by the trace id, the same
 * for parent and child; `always_on` would have sampled the parent; `always_off` samples nothing),
 * so a hot path may skip starting one: nothing it would record is lost.
 */
export function unsampledLocalSpan(ctx: Context = contextApi.active()): Span | undefined {
  const span = trace.getSpan(ctx);
  if (span === undefined || span.isRecording()) return undefined;
  const spanContext = span.spanContext();
  if (spanContext.isRemote === true || !isSpanContextValid(spanContext)) return undefined;
  return (spanContext.traceFlags & TraceFlags.SAMPLED) === 0 ? span : undefined;
}
