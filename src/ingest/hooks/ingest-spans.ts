import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { extractTraceparent } from '../../observability/tracing/trace-context.ts';
import type { Feed } from '../../trace/trace-keys.ts';

/** The feed of a route template, or undefined for a route that is no feed's (no span). */
export function feedOfRoute(route: string | undefined): Feed | undefined {
  if (route === undefined) return undefined;
  if (route === '/v1/record-updates' || route.startsWith('/v1/record-updates/')) return 'json';
  if (route === '/v1/hl7v2') return 'hl7v2-http';
  if (route.startsWith('/v1/fhir/')) return 'fhir';
  return undefined;
}

/**
 * A server span per request of the feed routes (JSON record updates and batches, HL7 v2 over
 * HTTP, FHIR), named by method and route template (`POST /v1/record-updates`: never the URL,
 * which may carry an id). Its parent is the request's `traceparent` header when valid (the
 * integration engine's span), else none. It is made the active span around the handler (the
 * preHandler hook runs the rest of the request in its context), so that the `redis.commit` span
 * is its child and the receipt keeps its trace id. Attributes: `http.request.method`,
 * `http.route`, `url.scheme`, `cw.feed`, `cw.batch.size` (an array body), and
 * `http.response.status_code` when answered; a 5xx is an error. Install only with tracing on
 * (off, no hook is added) and before the other hooks, so that a request refused by them (401,
 * 503) has its span too.
 */
export function installIngestSpans(app: FastifyInstance, tracer: Tracer): void {
  const spans = new WeakMap<FastifyRequest, Span>();
  const end = (request: FastifyRequest, statusCode: number | undefined) => {
    const span = spans.get(request);
    if (span === undefined) return;
    spans.delete(request);
    if (statusCode !== undefined) {
      span.setAttribute('http.response.status_code', statusCode);
      if (statusCode >= 500) {
        span.setAttribute('error.type', String(statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    } else {
      span.setAttribute('error.type', 'aborted');
    }
    span.end();
  };
  app.addHook('onRequest', function startIngestSpan(request, _reply, done) {
    const route = request.routeOptions.url;
    const feed = feedOfRoute(route);
    if (feed !== undefined && route !== undefined) {
      const header = request.headers.traceparent;
      const parent = extractTraceparent(
        typeof header === 'string' ? header : undefined,
        ROOT_CONTEXT,
      );
      const span = tracer.startSpan(
        `${request.method} ${route}`,
        { kind: SpanKind.SERVER },
        parent,
      );
      // Attributes only on a span that records (most are unsampled).
      if (span.isRecording()) {
        span.setAttributes({
          'http.request.method': request.method,
          'http.route': route,
          'url.scheme': request.protocol,
          'cw.feed': feed,
        });
      }
      spans.set(request, span);
    }
    done();
  });
  app.addHook('preHandler', function activateIngestSpan(request, _reply, done) {
    const span = spans.get(request);
    if (span === undefined) {
      done();
      return;
    }
    const body: unknown = request.body;
    if (Array.isArray(body) && span.isRecording()) span.setAttribute('cw.batch.size', body.length);
    // The handler runs from here on: in the span's context.
    context.with(trace.setSpan(context.active(), span), done);
  });
  app.addHook('onResponse', function endIngestSpan(request, reply, done) {
    end(request, reply.statusCode);
    done();
  });
  app.addHook('onRequestAbort', function abortIngestSpan(request, done) {
    end(request, undefined);
    done();
  });
}
