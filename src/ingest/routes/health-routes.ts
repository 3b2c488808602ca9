import type { FastifyPluginAsync } from 'fastify';
import type { RedisClient } from '../../queues/redis-client.ts';
import type { Registry } from 'prom-client';
import { RedisUnavailableError } from '../errors/redis-unavailable-error.ts';

export interface HealthRouteOptions {
  redis: RedisClient;
  registry: Registry;
  /**
   * How long `/readyz` waits for PING: a connection that queues commands offline would otherwise
   * hold the probe until Redis returns.
   * @defaultValue 2000
   */
  readyTimeoutMs?: number;
}

async function ping(redis: RedisClient, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('Command timed out')), timeoutMs);
  });
  try {
    await Promise.race([redis.ping(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** `/healthz` (alive), `/readyz` (Redis answers), `/metrics`: public, for probes and scrapers. */
export const healthRoutes: FastifyPluginAsync<HealthRouteOptions> = async (
  app,
  { redis, registry, readyTimeoutMs = 2_000 },
) => {
  const config = { public: true };

  app.get('/healthz', { config }, async () => ({ status: 'ok' }));

  app.get('/readyz', { config }, async () => {
    try {
      await ping(redis, readyTimeoutMs);
    } catch (error) {
      throw new RedisUnavailableError({ cause: error });
    }
    return { status: 'ready' };
  });

  app.get('/metrics', { config }, async (_request, reply) => {
    return reply.type(registry.contentType).send(await registry.metrics());
  });
};
