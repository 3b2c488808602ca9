import type { FastifyPluginAsync } from 'fastify';
import type { RedisClient } from '../../queues/redis-client.ts';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { RedisUnavailableError } from '../errors/redis-unavailable-error.ts';
import { statusAnswer } from '../schemas/answer-schemas.ts';

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

const METRICS_TEXT = z
  .string()
  .meta({ examples: ['cw_ingest_events_total{source="ehr-adt",outcome="accepted"} 1\n'] });

/** `/healthz` (alive), `/readyz` (Redis answers), `/metrics`: public, for probes and scrapers. */
export const healthRoutes: FastifyPluginAsync<HealthRouteOptions> = async (
  app,
  { redis, registry, readyTimeoutMs = 2_000 },
) => {
  const config = { public: true };
  const tags = ['health'];

  app.get(
    '/healthz',
    {
      config,
      schema: {
        operationId: 'getHealth',
        summary: 'Liveness: the process answers',
        tags,
        response: { 200: statusAnswer('ok').meta({ description: 'Alive.' }) },
      },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      config,
      schema: {
        operationId: 'getReadiness',
        summary: 'Readiness: Redis answers',
        tags,
        response: { 200: statusAnswer('ready').meta({ description: 'Ready to serve.' }) },
      },
    },
    async () => {
      try {
        await ping(redis, readyTimeoutMs);
      } catch (error) {
        throw new RedisUnavailableError({ cause: error });
      }
      return { status: 'ready' };
    },
  );

  app.get(
    '/metrics',
    {
      config,
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        tags,
        response: {
          200: {
            description: 'The Prometheus text exposition format.',
            content: { 'text/plain': { schema: METRICS_TEXT } },
          },
        },
      },
    },
    async (_request, reply) => {
      return reply.type(registry.contentType).send(await registry.metrics());
    },
  );
};
