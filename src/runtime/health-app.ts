import Fastify, { type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

/** One readiness condition; a check that throws counts as not ready. */
export type ReadinessCheck = () => boolean | Promise<boolean>;

export interface HealthAppOptions {
  metrics: Registry;
  /** What must hold for the process to do its work, by name (e.g. `redis`, `workers`). */
  checks: Record<string, ReadinessCheck>;
  /**
   * What `/readyz` reports besides its checks, without deciding readiness (the worker's
   * `service`: the Clinical Graph Service's health as its requests find it).
   */
  details?: () => Record<string, unknown>;
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
export function buildHealthApp({ metrics, checks, details }: HealthAppOptions): FastifyInstance {
  const app = Fastify({ logger: false });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const names = Object.keys(checks);
    const results = await Promise.all(names.map((name) => outcome(checks[name] ?? (() => false))));
    const byName = Object.fromEntries(names.map((name, i) => [name, results[i] === true]));
    const ok = results.every(Boolean);
    return reply
      .code(ok ? 200 : 503)
      .send({ status: ok ? 'ready' : 'not ready', checks: byName, ...details?.() });
  });
  app.get('/metrics', async (_request, reply) =>
    reply.type(metrics.contentType).send(await metrics.metrics()),
  );
  return app;
}

/** A running health server (see {@link startHealthServer}). */
export interface HealthServer {
  /** Its address, e.g. `http://127.0.0.1:9464`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Opens the health port of a long-running role (`worker.metrics_port`, `METRICS_PORT`): every
 * role serves `/healthz`, `/readyz` and `/metrics` there, so that one probe (the image's
 * HEALTHCHECK, a Kubernetes probe) fits all of them.
 */
export async function startHealthServer(
  options: HealthAppOptions & { port: number; host: string },
): Promise<HealthServer> {
  const app = buildHealthApp(options);
  const url = await app.listen({ port: options.port, host: options.host });
  return { url, close: () => app.close() };
}
