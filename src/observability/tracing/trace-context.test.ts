import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import {
  extractTraceparent,
  injectTraceparent,
  sampledTraceId,
  unsampledLocalSpan,
} from './trace-context.ts';

const SAMPLED = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const NOT_SAMPLED = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';

describe('traceparent', () => {
  it('round-trips through extract and inject', () => {
    expect(injectTraceparent(extractTraceparent(SAMPLED, ROOT_CONTEXT))).toBe(SAMPLED);
    expect(injectTraceparent(extractTraceparent(NOT_SAMPLED, ROOT_CONTEXT))).toBe(NOT_SAMPLED);
  });

  it('makes a remote parent with the ids and the sampled flag', () => {
    const parent = trace.getSpanContext(extractTraceparent(SAMPLED, ROOT_CONTEXT));
    expect(parent).toEqual({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    // Flags other than sampled are not carried on.
    const other = extractTraceparent(SAMPLED.replace(/-01$/, '-03'), ROOT_CONTEXT);
    expect(injectTraceparent(other)).toBe(SAMPLED);
    // Upper-case hex is read as lower case.
    expect(injectTraceparent(extractTraceparent(SAMPLED.toUpperCase(), ROOT_CONTEXT))).toBe(
      SAMPLED,
    );
  });

  it.each([
    undefined,
    null,
    '',
    'garbage',
    '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    '00-00000000000000000000000000000000-b7ad6b7169203331-01',
    '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra',
    '00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01',
  ])('leaves the context as it is for %j', (value) => {
    expect(extractTraceparent(value, ROOT_CONTEXT)).toBe(ROOT_CONTEXT);
    expect(injectTraceparent(extractTraceparent(value, ROOT_CONTEXT))).toBeUndefined();
  });

  it('injects nothing when no span is active (tracing off)', () => {
    expect(injectTraceparent()).toBeUndefined();
    expect(injectTraceparent(context.active())).toBeUndefined();
  });

  it('names the trace id of a sampled trace only', () => {
    expect(sampledTraceId(extractTraceparent(SAMPLED, ROOT_CONTEXT))).toBe(
      '0af7651916cd43dd8448eb211c80319c',
    );
    expect(sampledTraceId(extractTraceparent(NOT_SAMPLED, ROOT_CONTEXT))).toBeNull();
    expect(sampledTraceId(ROOT_CONTEXT)).toBeNull();
  });

  it('names a local unsampled span only (under which a child span may be skipped)', () => {
    const ids = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };
    const local = trace.wrapSpanContext({ ...ids, traceFlags: TraceFlags.NONE });
    expect(unsampledLocalSpan(trace.setSpan(ROOT_CONTEXT, local))).toBe(local);
    const sampled = trace.wrapSpanContext({ ...ids, traceFlags: TraceFlags.SAMPLED });
    expect(unsampledLocalSpan(trace.setSpan(ROOT_CONTEXT, sampled))).toBeUndefined();
    // A remote parent is left to the sampler (`always_on` samples under an unsampled one).
    expect(unsampledLocalSpan(extractTraceparent(NOT_SAMPLED, ROOT_CONTEXT))).toBeUndefined();
    expect(unsampledLocalSpan(ROOT_CONTEXT)).toBeUndefined();
    expect(unsampledLocalSpan()).toBeUndefined();
  });
});
