import {
  context as contextApi,
  createContextKey,
  isSpanContextValid,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import {
  extractTraceparent,
  injectTraceparent,
  unsampledLocalSpan,
} from '../observability/tracing/trace-context.ts';

/**
 * The client spans of a query's calls to the Clinical Graph Service (docs/opentelemetry.md):
 * `cgs.submit` around a submission, whose parent is the `traceparent` of the message that opened
 * the query (kept in its trace by the commit script), and `cgs.poll` around each poll, whose parent
 * is the submission's span (its `traceparent` travels with the remote job in the poll set). Only
 * allowlisted attributes are set: codes and counters, never an identifier.
 */

/** Where the service is, for the spans' `server.*` attributes. */
export interface ServiceEndpoint {
  /** The service's `host[:port]` (ServiceClient.host). */
  host: string;
  /** `http` or `https`, when known. */
  scheme?: 'http' | 'https' | undefined;
}

export interface QuerySpansOptions {
  tracer: Tracer;
  /** The partition served (`cw.partition`). */
  partition?: number | undefined;
  service?: ServiceEndpoint | undefined;
}

/** What a span of a query names (never the patient). */
export interface SpannedQuery {
  ccsrCategory: string;
  seq: number;
}

/** What a span learns of how its call went. */
export interface CallEnd {
  /** `cw.outcome`: what the call came to (`submitted`, `pending`, `completed`, `retry`, …). */
  outcome?: string | undefined;
  /** The HTTP status of the service's answer, when one came. */
  status?: number | undefined;
  /** `cw.error.code`: an `ERR_*` code. */
  errorCode?: string | undefined;
  /** `cw.remote_job_id`: the service's id of the query's job. */
  remoteJobId?: string | undefined;
}

function serverAttributes(service: ServiceEndpoint | undefined): Attributes {
  if (service === undefined) return {};
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(service.host);
  if (match === null) return {};
  const [, address, port] = match;
  return {
    'server.address': address,
    ...(port === undefined ? {} : { 'server.port': Number(port) }),
    ...(service.scheme === undefined ? {} : { 'url.scheme': service.scheme }),
  };
}

/** Marks the context of a service call's span (see {@link noteServiceAnswer}). */
const SERVICE_CALL = createContextKey('cw.service_call');

/**
 * Notes the HTTP status of the service's answer (the service client's `onResponse`, called in the
 * call's context) on the `cgs.submit` or `cgs.poll` span the call runs under; nothing elsewhere,
 * nor with tracing off.
 */
export function noteServiceAnswer(status: number | string): void {
  if (typeof status !== 'number' || contextApi.active().getValue(SERVICE_CALL) !== true) return;
  trace.getActiveSpan()?.setAttribute('http.response.status_code', status);
}

/** Sets what the call came to on `span`; an error code marks the span an error. */
export function endCall(span: Span, end: CallEnd): void {
  if (end.outcome !== undefined) span.setAttribute('cw.outcome', end.outcome);
  if (end.status !== undefined) span.setAttribute('http.response.status_code', end.status);
  if (end.remoteJobId !== undefined) span.setAttribute('cw.remote_job_id', end.remoteJobId);
  if (end.errorCode !== undefined) {
    span.setAttribute('cw.error.code', end.errorCode);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
}

/** The HTTP status a service error carries (ServiceError.status), if any. */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

/** The `ERR_*` code an error carries, if any. */
export function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_') ? code : undefined;
}

export class QuerySpans {
  readonly #tracer: Tracer;
  readonly #common: Attributes;

  constructor({ tracer, partition, service }: QuerySpansOptions) {
    this.#tracer = tracer;
    this.#common = {
      ...(partition === undefined ? {} : { 'cw.partition': partition }),
      ...serverAttributes(service),
    };
  }

  /**
   * Runs `fn` under a `cgs.submit` span, child of `traceparent` (the message's ingest span) when
   * there is one, else of the active span; the active span (BullMQ's consumer span of the job) is
   * linked when it is not the parent. `fn` gets the span and its `traceparent` (what the remote job
   * keeps for its polls, sampled or not).
   */
  submit<T>(
    query: SpannedQuery,
    traceparent: string | undefined,
    fn: (span: Span, traceparent: string | undefined) => Promise<T>,
  ): Promise<T> {
    const active = contextApi.active();
    const parent = extractTraceparent(traceparent, active);
    const consumer = trace.getSpanContext(active);
    const links: Link[] =
      parent !== active && consumer !== undefined && isSpanContextValid(consumer)
        ? [{ context: consumer }]
        : [];
    return this.#run(
      'cgs.submit',
      () => ({ ...this.#attributes(query), 'http.request.method': 'POST' }),
      parent,
      links,
      fn,
    );
  }

  /**
   * Runs `fn` under a `cgs.poll` span (attempt `attempt`, 1 for the first poll), child of the
   * submission's span named by `traceparent`.
   */
  poll<T>(
    query: SpannedQuery,
    traceparent: string | undefined,
    attempt: number,
    fn: (span: Span) => Promise<T>,
  ): Promise<T> {
    return this.#run(
      'cgs.poll',
      () => ({
        ...this.#attributes(query),
        'http.request.method': 'GET',
        'cw.poll.attempt': attempt,
      }),
      extractTraceparent(traceparent),
      [],
      (span) => fn(span),
    );
  }

  #attributes(query: SpannedQuery): Attributes {
    return { ...this.#common, 'cw.ccsr_category': query.ccsrCategory, 'cw.query.seq': query.seq };
  }

  #run<T>(
    name: string,
    attributes: () => Attributes,
    parent: ReturnType<typeof contextApi.active>,
    links: Link[],
    fn: (span: Span, traceparent: string | undefined) => Promise<T>,
  ): Promise<T> {
    // Under a local unsampled span (the job's unsampled consumer span), a child would not be
    // recorded either: `fn` runs under that span, and the `traceparent` kept for the polls is its
    // (unsampled, so that the polls are not sampled either).
    const unsampled = unsampledLocalSpan(parent);
    if (unsampled !== undefined) return fn(unsampled, injectTraceparent(parent));
    return this.#tracer.startActiveSpan(
      name,
      { kind: SpanKind.CLIENT, links },
      parent.setValue(SERVICE_CALL, true),
      async (span) => {
        // Built and set only for a span that records: most are unsampled (no samplers of ours
        // look at attributes, so they need not be there at the start).
        if (span.isRecording()) span.setAttributes(attributes());
        try {
          // Kept sampled or not, so that the polls follow the submission's sampling decision.
          return await fn(span, injectTraceparent());
        } catch (err) {
          endCall(span, { errorCode: codeOf(err), status: statusOf(err) });
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }
}
