import Fastify, { type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

export interface HealthAppOptions {
  metrics: Registry;
  /** True when the process can do its work (Redis answers, workers run). */
  ready(): Promise<boolean>;
}

/** `/healthz` (liveness only), `/readyz` and `/metrics` of a worker process. */
export function buildHealthApp({ metrics, ready }: HealthAppOptions): FastifyInstance {
  const app = Fastify({ logger: false });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ok = await ready().catch(() => false);
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'not ready' });
  });
  app.get('/metrics', async (_request, reply) =>
    reply.type(metrics.contentType).send(await metrics.metrics()),
  );
  return app;
}
