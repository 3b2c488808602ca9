import Fastify, { type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

/** One readiness condition; a check that throws counts as not ready. */
export type ReadinessCheck = () => boolean | Promise<boolean>;

export interface HealthAppOptions {
  metrics: Registry;
  /** What must hold for the process to do its work, by name (e.g. `redis`, `workers`). */
  checks: Record<string, ReadinessCheck>;
}

async function outcome(check: ReadinessCheck): Promise<boolean> {
  try {
    return (await check()) === true;
  } catch {
    return false;
  }
}

/**
 * `/healthz` (liveness only: the process answers), `/readyz` (200 when every check holds, else 503;
 * the body names each check's result) and `/metrics` of a worker process.
 */
export function buildHealthApp({ metrics, checks }: HealthAppOptions): FastifyInstance {
  const app = Fastify({ logger: false });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const names = Object.keys(checks);
    const results = await Promise.all(names.map((name) => outcome(checks[name] ?? (() => false))));
    const byName = Object.fromEntries(names.map((name, i) => [name, results[i] === true]));
    const ok = results.every(Boolean);
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'not ready', checks: byName });
  });
  app.get('/metrics', async (_request, reply) =>
    reply.type(metrics.contentType).send(await metrics.metrics()),
  );
  return app;
}
