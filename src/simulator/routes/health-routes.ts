import type { FastifyInstance } from 'fastify';

/** `GET /healthz`: no key needed, never faulted, never logged. */
export function registerHealthRoutes(app: FastifyInstance): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
}
