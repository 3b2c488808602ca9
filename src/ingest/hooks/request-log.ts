import type { FastifyInstance } from 'fastify';

/**
 * One line per request, in place of fastify's request logging (turned off in the app builder):
 * that one logs the URL, and the presets routes carry the hospital's patient id in theirs. This
 * line names the route pattern instead, and never headers (the bearer token) or bodies.
 */
export function installRequestLog(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? '(no route)',
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime),
      },
      'request completed',
    );
  });
}
