import type { Config } from '../config/config-schema.ts';
import { serviceClientOptions } from '../config/service-client-options.ts';
import type { Logger } from '../observability/logger.ts';
import { redisAnswers, workerConnection } from '../queues/redis-connections.ts';
import { createServiceClient } from '../service/create-service-client.ts';
import { initConcordanceQueries } from '../../workers/concordance-queries.ts';
import { buildHealthApp } from './health-app.ts';
import { crosswalkKeysFrom, outboundChannel, pipelineContext } from './pipeline-context.ts';
import { StartupError } from './startup-error.ts';
import { WorkerRegistry } from './worker-registry.ts';

export interface RunningProcess {
  /** Where /healthz, /readyz and /metrics answer (or the ingest API, for ingest). */
  url: string;
  close(): Promise<void>;
}

/** `concordance-worker work`: the query workers and their health and metrics server. */
export async function runWorker(config: Config, logger: Logger): Promise<RunningProcess> {
  if (config.service.api_key === undefined) {
    throw new StartupError('SERVICE_API_KEY is not set: the workers cannot call the service');
  }
  if (!config.delivery.outbound_queue.enabled) {
    throw new StartupError('no output channel is enabled: enable delivery.outbound_queue');
  }
  const keys = crosswalkKeysFrom(config);
  const redis = workerConnection(config.redis.url, 'cw-work');
  const context = pipelineContext(config, logger, redis, keys);
  const client = createServiceClient(serviceClientOptions(config, { logger }));
  const outbound = outboundChannel(context, redis);
  const registry = new WorkerRegistry();
  registry.add(
    await initConcordanceQueries({
      connection: redis,
      prefix: context.prefix,
      config,
      client,
      state: context.state,
      records: context.records,
      crosswalk: context.crosswalk,
      sink: outbound,
      logger,
    }),
  );

  const health = buildHealthApp({
    metrics: context.metrics,
    ready: async () => registry.allRunning() && (await redisAnswers(redis)),
  });
  const url = await health.listen({ port: config.worker.metrics_port, host: config.worker.host });
  logger.info({ url, queues: registry.entries.map((e) => e.name) }, 'workers started');

  return {
    url,
    async close() {
      await health.close();
      await registry.close();
      await outbound.close();
      await redis.quit();
      logger.info('workers stopped');
    },
  };
}
