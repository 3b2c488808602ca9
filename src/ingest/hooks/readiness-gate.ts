import type { FastifyInstance } from 'fastify';
import { RedisUnavailableError } from '../errors/redis-unavailable-error.ts';

/** Routes that answer whatever the state of Redis: liveness and metrics. */
export const ALWAYS_OPEN: ReadonlySet<string> = new Set(['/healthz', '/metrics']);

/**
 * Until `isReady()` holds (the process has reached Redis once and its queue is set up), every
 * route but `/healthz` and `/metrics` is answered 503 with `Retry-After`, `/readyz` included: the
 * port is open from the start, so that probes and senders get an answer rather than a refused
 * connection. Runs after the bearer check, so that a caller without a token still gets 401.
 */
export function installReadinessGate(app: FastifyInstance, isReady: () => boolean): void {
  let open = false;
  app.addHook('onRequest', async (request) => {
    if (open || ALWAYS_OPEN.has(request.routeOptions.url ?? '')) return;
    if (!isReady()) throw new RedisUnavailableError();
    open = true;
  });
}
