import { tuneWorkerHeap } from './worker-heap.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import type { Registry } from 'prom-client';
import type { Config } from '../config/config-schema.ts';
import type { Logger } from '../observability/logger.ts';
import type { WatchedDueSet } from '../observability/pipeline-metrics.ts';
import { watchWebhookRetries, type WatchedRetries } from '../observability/webhook-retry-gauge.ts';
import { AuthPause } from '../queues/auth-pause.ts';
import { commandConnection, redisAnswers, workerConnection } from '../queues/redis-connections.ts';
import { OutboundQueueChannel } from '../delivery/outbound-queue-channel.ts';
import { WebhookChannel } from '../delivery/webhook-channel.ts';
import { startHealthServer, type ReadinessCheck } from './health-app.ts';
import { RedisOutageLog } from './redis-outage-log.ts';
import { RedisRefusalGate } from './redis-refusal-gate.ts';
import { logRedisPersistence } from '../queues/redis-persistence.ts';
import { serviceReadiness } from './service-readiness.ts';
import { serviceUrlWarnings } from '../config/service-url-warnings.ts';
import { ServiceHealthRecord } from './service-health-record.ts';
import { settlesWithin } from './close-worker.ts';
import { App, crosswalkKeysFrom, servedPartitions } from '../app/compose-app.ts';
import { assertRoleConfig } from './role-problems.ts';
import { StartupError } from '../config/startup-error.ts';
import { webhookTransportWarnings } from '../config/webhook-transport.ts';
import { WorkerRegistry, type QueueWorker } from './worker-registry.ts';
import { DemographicsWait } from '../records/demographics-wait.ts';
import { registerDemographicsWaitGauge } from '../records/demographics-wait-gauge.ts';
import type { TracingHandle } from '../observability/tracing/start-tracing.ts';
import { roleTracing } from './role-tracing.ts';

export interface RunningProcess {
  /** Where /healthz, /readyz and /metrics answer (or the ingest API, for ingest). */
  url: string;
  /**
   * The health port's address (`worker.metrics_port`): `/healthz`, `/readyz`, `/metrics` of every
   * long-running role.
   */
  healthUrl: string;
  /**
   * Resolves once the role does its work (Redis answered, workers started); until then its health
   * port answers `/readyz` 503. Rejects when the start-up fails for another reason than Redis.
   */
  ready: Promise<void>;
  close(): Promise<void>;
}

export interface RunningWorker extends RunningProcess {
  /** The queue workers `/readyz` watches (empty until {@link RunningProcess.ready}). */
  workers: WorkerRegistry;
}

export interface RoleOptions {
  /**
   * The process's metrics registry, when several roles share one process (`start`).
   * @defaultValue a registry of this role's own, with the default process metrics
   */
  registry?: Registry;
  /** More readiness checks for the worker's `/readyz` (`start`: the ingest's). */
  checks?: Record<string, ReadinessCheck>;
  /**
   * The process's tracing when several roles share one process (`start`), or a test's: its giver
   * shuts it down. @defaultValue started by the role from the `OTEL_*` variables, shut down by its
   * close
   */
  tracing?: TracingHandle;
}

/** Time kept out of the shutdown grace for closing servers and connections after the workers. */
const CLOSE_RESERVE_MS = 5_000;

/** How long the workers may take to close: the grace period less what the rest needs. */
export function workerCloseBudgetMs(config: Config): number {
  const grace = config.shutdown.grace_ms;
  return Math.max(grace - CLOSE_RESERVE_MS, grace / 2);
}

/** Resolves once `redis` is ready (at once if it is); rejects with `signal`'s reason. */
function redisReady(redis: RedisClient, signal: AbortSignal): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const ready = () => {
      signal.removeEventListener('abort', aborted);
      resolve();
    };
    const aborted = () => {
      redis.off('ready', ready);
      reject(signal.reason as Error);
    };
    redis.once('ready', ready);
    signal.addEventListener('abort', aborted, { once: true });
  });
}

/**
 * `concordance-worker work`: the query workers and their health and metrics server. The health
 * port opens first, before Redis answers (`/readyz` 503 until the workers run); the workers start
 * once Redis is ready.
 */
export async function runWorker(
  config: Config,
  logger: Logger,
  options: RoleOptions = {},
): Promise<RunningWorker> {
  assertRoleConfig(config, 'work');
  tuneWorkerHeap();
  // Before anything is built: an invalid OTEL_* value fails the start (ERR_TRACING_ENV).
  const { tracing, owned: ownsTracing } = await roleTracing(options.tracing, 'work', logger);
  for (const { path, message, host } of serviceUrlWarnings(config)) {
    logger.warn({ setting: path, service_host: host }, message);
  }
  // A plain http:// webhook to another machine, allowed explicitly: said at every start.
  for (const { message, host } of webhookTransportWarnings(config)) logger.warn({ host }, message);
  const keys = crosswalkKeysFrom(config);
  // BullMQ's connection, and one for the workers' own commands (pipelined automatically).
  const redis = workerConnection(config.redis, 'cw-work');
  const commands = commandConnection(config.redis, 'cw-work-commands');
  // Redis refusing our credentials or ACL ends the start-up: waiting would not help.
  const refusal = new RedisRefusalGate(config.redis.url);
  const outages = new RedisOutageLog({
    logger,
    probe: () => redisAnswers(redis),
    onRefused: (reply) => refusal.refuse(reply),
    redisUrl: config.redis.url,
  }).watch(redis);
  outages.watch(commands);
  const app = App.compose(config, logger, {
    redis: commands,
    keys,
    registry: options.registry,
    tracing,
  });
  const metrics = app.pipelineMetrics;
  const unwatchRedis = metrics.watchRedis(() => redisAnswers(redis));
  const client = app.serviceClient();
  // The service's health, for `status` (another process): written on each change.
  const healthRecord = new ServiceHealthRecord(commands, app.prefix);
  app.serviceHealth.recordTo((health) => healthRecord.write(health));
  const { outboundMetrics, partitions } = app;
  // Throws before any worker starts when no channel is enabled, the webhook has no secret or the
  // outbound queue no OUTBOUND_KEY.
  const delivery = app.deliveryRouter(redis);
  const registry = new WorkerRegistry(workerCloseBudgetMs(config), (queue, outcome) => {
    if (outcome === 'closed') return;
    logger.warn(
      { queue, outcome },
      outcome === 'forced'
        ? 'a queue worker closed without waiting for its active jobs (redis unreachable): they come back'
        : 'a queue worker did not close in time: abandoned (its jobs come back)',
    );
  });
  const outboundQueues = delivery.channels.flatMap((channel) =>
    channel instanceof OutboundQueueChannel ? [channel.queue] : [],
  );
  // Every channel's queue gets the outage log's listener (else ioredis prints raw dumps).
  for (const channel of delivery.channels) {
    if (channel instanceof OutboundQueueChannel) {
      outages.listen(`${channel.queue.name} (channel)`, channel.queue);
    }
    if (channel instanceof WebhookChannel) {
      for (const queue of channel.queues) outages.listen(`${queue.name} (channel)`, queue);
    }
  }

  const demographics = new DemographicsWait({ redis: commands, prefix: partitions });
  registerDemographicsWaitGauge(app.metrics, demographics);

  const health = await startHealthServer({
    port: config.worker.metrics_port,
    host: config.worker.host,
    metrics: app.metrics,
    checks: {
      redis: () => redisAnswers(redis),
      workers: () => registry.allRunning(),
      ...options.checks,
    },
    // Reported, not a check: an unreachable service does not make the worker unready.
    details: () => ({ service: serviceReadiness(app.serviceHealth.hosts()) }),
  });
  const { url } = health;
  logger.info({ url }, 'health server listening');

  const stopping = new AbortController();
  let unwatch = (): void => undefined;
  const start = async () => {
    await redisReady(redis, AbortSignal.any([stopping.signal, refusal.signal]));
    // Once per start: whether Redis keeps the crosswalk on disk (a warning when it keeps nothing).
    void logRedisPersistence(commands, logger);
    const served: { queue: QueueWorker['queue']; partition: number }[] = [];
    const dueSets: WatchedDueSet[] = [];
    const retries: WatchedRetries[] = [];
    const add = (entry: QueueWorker, partition: number) => {
      outages.listen(entry.name, ...(entry.worker ? [entry.worker] : []), entry.queue);
      registry.add(entry);
      served.push({ queue: entry.queue, partition });
    };
    // The concordance queries (outbox relay, submission worker, poller) and the webhook worker of
    // each partition served.
    for (const p of servedPartitions(config)) {
      const log = partitions.count > 1 ? logger.child({ partition: p }) : logger;
      const queries = await app.queryEngine({
        connection: commands,
        partition: p,
        client,
        // The router counts every channel's deliveries (the webhook worker its own attempts).
        sink: delivery.router,
        logger: log,
        demographics,
      });
      add(queries, p);
      dueSets.push(
        { set: 'submit', partition: p, depth: (now) => queries.outboxDepth(now) },
        { set: 'poll', partition: p, depth: (now) => queries.poller.depth(now) },
      );
      if (config.delivery.webhook.url !== null) {
        const webhook = await app.webhookDeliveries(redis, p, log);
        add(webhook, p);
        retries.push({ partition: p, oldestRetryAt: () => webhook.store.oldestRetryAt() });
      }
    }
    // Every queue this process knows, read on each scrape.
    const unwatchQueues = metrics.watchQueues(...served, ...outboundQueues);
    const unwatchPolls = metrics.watchDueSets(...dueSets);
    // cw_webhook_oldest_retry_seconds: each served partition's oldest failing webhook delivery.
    const unwatchRetries = watchWebhookRetries(app.metrics, retries);
    const unwatchLag = outboundQueues.map((queue) => outboundMetrics.watch(queue));
    // cw_queue_auth_paused: the flag a worker sets when the service refuses the API key.
    const unwatchPauses = registry.entries.map(({ queue }) => {
      const pause = new AuthPause(queue, redis, app.prefix);
      return metrics.watchAuthPause(queue.name, () => pause.isPaused());
    });
    unwatch = () => {
      unwatchQueues();
      unwatchPolls();
      unwatchRetries();
      for (const stop of [...unwatchLag, ...unwatchPauses]) stop();
    };
    logger.info(
      {
        url,
        queues: [...new Set(registry.entries.map((e) => e.name))],
        partitions: servedPartitions(config),
      },
      'workers started',
    );
  };
  const ready = refusal.guard(start());
  // A start-up cut short by close() is not a failure; the caller handles any other rejection.
  ready.catch(() => undefined);

  return {
    url,
    healthUrl: url,
    ready,
    workers: registry,
    async close() {
      stopping.abort(new StartupError('stopped before Redis answered'));
      await health.close();
      app.serviceHealth.recordTo(undefined);
      unwatch();
      unwatchRedis();
      await registry.close();
      await settlesWithin(delivery.close(), CLOSE_RESERVE_MS / 4);
      outages.stop();
      // While Redis is away, quit() would wait for it: the connection is dropped instead.
      if (commands.status === 'ready') {
        await settlesWithin(commands.quit(), CLOSE_RESERVE_MS / 4);
      }
      commands.disconnect();
      if (redis.status === 'ready') {
        await settlesWithin(redis.quit(), CLOSE_RESERVE_MS / 4);
      }
      redis.disconnect();
      // The spans of the last jobs are exported (bounded by the export timeout).
      if (ownsTracing) await tracing.shutdown();
      logger.info('workers stopped');
    },
  };
}
