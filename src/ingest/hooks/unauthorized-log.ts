import type { FastifyInstance } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { PerClientThrottle, type PerClientThrottleOptions } from './per-client-throttle.ts';

/** Why a request was answered 401: it carried no credentials, or ones we do not accept. */
export type AuthFailure = 'missing' | 'invalid';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by whatever answers 401 (the bearer check, the queue view): why. */
    authFailure?: AuthFailure;
  }
}

export const UNAUTHORIZED_METRIC = 'cw_ingest_unauthorized_total';

function unauthorizedCounter(registry: Registry): Counter<'route' | 'reason'> {
  const existing = registry.getSingleMetric(UNAUTHORIZED_METRIC);
  if (existing instanceof Counter) return existing as Counter<'route' | 'reason'>;
  return new Counter({
    name: UNAUTHORIZED_METRIC,
    help: 'Requests to the ingest port answered 401, by route pattern and reason (missing: no credentials; invalid: a token or session not accepted).',
    labelNames: ['route', 'reason'],
    registers: [registry],
  });
}

export interface UnauthorizedLogOptions extends PerClientThrottleOptions {
  registry: Registry;
}

/**
 * Every 401 of the ingest port (ingest and admin tokens, the queue view's API and login) is
 * counted in `cw_ingest_unauthorized_total{route, reason}` (the route pattern, never the URL) and
 * logged at warn as `unauthorized request` with the client's address (`request.ip`: the peer of
 * the TCP connection, since the app does not trust `X-Forwarded-For`), the route and the reason;
 * never a header or the token. At most one line per address per minute: the next line says how
 * many were held back (`suppressed`); the counter counts them all.
 */
export function installUnauthorizedLog(
  app: FastifyInstance,
  { registry, ...throttleOptions }: UnauthorizedLogOptions,
): void {
  const counter = unauthorizedCounter(registry);
  const throttle = new PerClientThrottle(throttleOptions);
  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode !== 401) return;
    const route = request.routeOptions.url ?? '(no route)';
    const reason = request.authFailure ?? 'invalid';
    counter.inc({ route, reason });
    const admitted = throttle.admit(request.ip);
    if (admitted === undefined) return;
    request.log.warn(
      {
        client_address: request.ip,
        method: request.method,
        route,
        reason,
        ...(admitted.suppressed > 0 ? { suppressed: admitted.suppressed } : {}),
      },
      'unauthorized request',
    );
  });
}
