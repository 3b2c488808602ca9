import type { Registry } from 'prom-client';
import type { Config } from '../config/config-schema.ts';
import { serviceClientOptions } from '../config/service-client-options.ts';
import type { Logger } from '../observability/logger.ts';
import { redisAnswers, workerConnection } from '../queues/redis-connections.ts';
import { createServiceClient } from '../service/create-service-client.ts';
import { createDeliveryRouter } from '../delivery/create-delivery-router.ts';
import { DeadLetterStore } from '../delivery/dead-letter-store.ts';
import { OutboundQueueChannel } from '../delivery/outbound-queue-channel.ts';
import { initConcordanceQueries } from '../../workers/concordance-queries.ts';
import { initWebhookDeliveries } from '../../workers/webhook-deliveries.ts';
import { buildHealthApp } from './health-app.ts';
import { logRedisOutages } from './redis-outage-log.ts';
import { crosswalkKeysFrom, pipelineContext } from './pipeline-context.ts';
import { StartupError } from './startup-error.ts';
import { WorkerRegistry } from './worker-registry.ts';

export interface RunningProcess {
  /** Where /healthz, /readyz and /metrics answer (or the ingest API, for ingest). */
  url: string;
  close(): Promise<void>;
}

export interface RunningWorker extends RunningProcess {
  /** The queue workers `/readyz` watches. */
  workers: WorkerRegistry;
}

export interface RoleOptions {
  /**
   * The process's metrics registry, when several roles share one process (`start`).
   * @defaultValue a registry of this role's own, with the default process metrics
   */
  registry?: Registry;
}

/** `concordance-worker work`: the query workers and their health and metrics server. */
export async function runWorker(
  config: Config,
  logger: Logger,
  options: RoleOptions = {},
): Promise<RunningWorker> {
  if (config.service.api_key === undefined) {
    throw new StartupError('SERVICE_API_KEY is not set: the workers cannot call the service');
  }
  const keys = crosswalkKeysFrom(config);
  const redis = workerConnection(config.redis.url, 'cw-work');
  const context = pipelineContext(config, logger, redis, keys, options.registry);
  const metrics = context.pipelineMetrics;
  const client = createServiceClient(
    serviceClientOptions(config, {
      logger,
      onResponse: (info) => metrics.observeServiceResponse(info),
    }),
  );
  const { outboundMetrics } = context;
  // Throws before any worker starts when no channel is enabled, the webhook has no secret or the
  // outbound queue no OUTBOUND_KEY.
  const delivery = createDeliveryRouter({
    config,
    connection: redis,
    prefix: context.prefix,
    keys,
    logger,
    metrics,
    outboundMetrics,
  });
  const registry = new WorkerRegistry(5_000, (queue) =>
    logger.warn({ queue }, 'a queue worker did not close in time: abandoned (its jobs come back)'),
  );
  registry.add(
    await initConcordanceQueries({
      connection: redis,
      prefix: context.prefix,
      config,
      client,
      state: context.state,
      records: context.records,
      crosswalk: context.crosswalk,
      // The router counts every channel's deliveries (the webhook worker its own attempts).
      sink: delivery.router,
      logger,
      metrics,
    }),
  );
  if (config.delivery.webhook.url !== null) {
    registry.add(
      await initWebhookDeliveries({
        config,
        connection: redis,
        prefix: context.prefix,
        keys,
        logger,
        metrics,
        deadLetters: new DeadLetterStore({
          redis,
          prefix: context.prefix,
          keys,
          retentionDays: config.delivery.dead_letters.retention_days,
        }),
      }),
    );
  }
  const outboundQueues = delivery.channels.flatMap((channel) =>
    channel instanceof OutboundQueueChannel ? [channel.queue] : [],
  );
  // Every queue this process knows, read on each scrape.
  const unwatchQueues = metrics.watchQueues(
    ...registry.entries.map((e) => e.queue),
    ...outboundQueues,
  );
  const unwatchLag = outboundQueues.map((queue) => outboundMetrics.watch(queue));
  const unwatch = () => {
    unwatchQueues();
    for (const stop of unwatchLag) stop();
  };
  logRedisOutages(logger, redis, [
    ...registry.entries.map((e) => ({ name: e.name, emitters: [e.worker, e.queue] })),
    ...outboundQueues.map((queue) => ({ name: queue.name, emitters: [queue] })),
  ]);

  const health = buildHealthApp({
    metrics: context.metrics,
    checks: {
      redis: () => redisAnswers(redis),
      workers: () => registry.allRunning(),
    },
  });
  const url = await health.listen({ port: config.worker.metrics_port, host: config.worker.host });
  logger.info({ url, queues: registry.entries.map((e) => e.name) }, 'workers started');

  return {
    url,
    workers: registry,
    async close() {
      await health.close();
      unwatch();
      await registry.close();
      await delivery.close();
      // An abandoned worker (see WorkerRegistry.close) has disconnected the shared connection.
      if (redis.status !== 'end') await redis.quit().catch(() => redis.disconnect());
      logger.info('workers stopped');
    },
  };
}
