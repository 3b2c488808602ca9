import type { Config } from '../config/config-schema.ts';
import { buildIngestApp } from '../ingest/build-ingest-app.ts';
import { ClinicalUpdates } from '../ingest/clinical-updates.ts';
import { PatientLocator } from '../ingest/patient-locator.ts';
import { startMllpServer } from '../ingest/hl7v2/mllp-server.ts';
import type { Logger } from '../observability/logger.ts';
import { PresetStore } from '../presets/preset-store.ts';
import { UpdateCommitter } from '../ingest/update-committer.ts';
import { crosswalkKeysFrom, pipelineContext, queriesQueues } from './pipeline-context.ts';
import { patientAdminFor } from './patient-admin-for.ts';
import {
  queueConnectionFor,
  redisAnswers,
  requestConnection,
} from '../queues/redis-connections.ts';
import type { RoleOptions, RunningProcess } from './run-worker.ts';
import { startHealthServer, type HealthServer } from './health-app.ts';
import { assertRoleConfig } from './role-problems.ts';
import { settlesWithin } from './close-worker.ts';
import { RedisOutageLog } from './redis-outage-log.ts';
import { ProblemTerminology } from '../terminology/problem-terminology.ts';

export interface IngestOptions extends RoleOptions {
  /**
   * Whether the ingest opens the health port (`worker.metrics_port`) itself; in `start` the
   * worker's health port serves both roles.
   * @defaultValue true
   */
  healthServer?: boolean;
}

/**
 * `concordance-worker ingest`: the HTTP API that accepts record updates and presets, the MLLP
 * listener and the health port (`/healthz`, `/readyz`, `/metrics` on `worker.metrics_port`, as
 * every long-running role). All open at once, before Redis answers: until the queue is set up the
 * routes answer 503 (`/readyz` too) and MLLP messages get the transient reply, so that senders
 * keep their messages and resend them.
 */
export async function runIngest(
  config: Config,
  logger: Logger,
  options: IngestOptions = {},
): Promise<RunningProcess> {
  assertRoleConfig(config, 'ingest');
  const keys = crosswalkKeysFrom(config);
  const redis = requestConnection(config.redis, 'cw-ingest', {
    commandTimeoutMs: config.redis.command_timeout_ms,
  });
  const outages = new RedisOutageLog({ logger }).watch(redis);
  const context = pipelineContext(config, logger, redis, keys, options.registry);
  // On a Redis Cluster the queue gets a copy of the connection that waits for the cluster.
  const forQueues = queueConnectionFor(redis);
  if (forQueues.owned) outages.watch(forQueues.connection);
  // The query queue of every partition (one without partitions): purges and opt-outs remove a
  // patient's jobs from its partition's, and /metrics counts them all.
  const queues = queriesQueues(context, forQueues.connection);
  for (const queue of queues) outages.listen(queue.name, queue);
  const unwatchQueues = context.pipelineMetrics.watchQueues(
    ...queues.map((queue, partition) => ({ queue, partition })),
  );
  const unwatchRedis = context.pipelineMetrics.watchRedis(() => redisAnswers(redis));
  const unwatch = () => {
    unwatchQueues();
    unwatchRedis();
  };
  let serving = false;
  const { partitions } = context;
  const presets = new PresetStore({ redis, prefix: partitions });
  const deps = {
    config,
    redis,
    crosswalk: context.crosswalk,
    records: context.records,
    presets,
    committer: UpdateCommitter.fromConfig({
      config,
      redis,
      records: context.records,
      presets,
      registry: context.metrics,
      keySpace: partitions,
    }),
    logger,
    metrics: { registry: context.metrics },
    terminology: ProblemTerminology.fromConfig({ config, redis, registry: context.metrics }),
  };
  // One crosswalk cache for every feed of the process.
  const locator = PatientLocator.fromConfig({
    config,
    crosswalk: context.crosswalk,
    registry: context.metrics,
  });
  const updates = ClinicalUpdates.fromDeps({ ...deps, locator });
  // Purge and opt-out (ADMIN_TOKENS); the stores a purge erases are listed in patientAdminFor.
  const patientAdmin = patientAdminFor({ config, redis, keys, logger, queues });
  const admin = patientAdmin.admin;
  const app = await buildIngestApp({
    ...deps,
    locator,
    updates,
    admin,
    isReady: () => serving,
  });
  let health: HealthServer | undefined;
  if (options.healthServer !== false) {
    health = await startHealthServer({
      port: config.worker.metrics_port,
      host: config.worker.host,
      metrics: context.metrics,
      checks: { redis: () => redisAnswers(redis), ingest: () => serving },
    });
    logger.info({ url: health.url }, 'health server listening');
  }
  const url = await app.listen({ port: config.ingest.port, host: config.ingest.host });
  const mllp = config.hl7v2.mllp.enabled
    ? await startMllpServer({
        config: config.hl7v2,
        updates,
        patients: admin,
        registry: context.metrics,
        logger,
      })
    : undefined;
  logger.info({ url, mllp_port: mllp?.port }, 'ingest ports open');
  // The queue's connection set-up waits for Redis, however long it is away. `ingest listening`
  // means serving (what scripts and tests wait for).
  const ready = Promise.all(queues.map((queue) => queue.waitUntilReady())).then(() => {
    serving = true;
    logger.info({ url, mllp_port: mllp?.port }, 'ingest listening');
  });
  ready.catch(() => undefined);
  return {
    url,
    healthUrl: health?.url ?? url,
    ready,
    async close() {
      await mllp?.close();
      await app.close();
      await health?.close();
      unwatch();
      outages.stop();
      await settlesWithin(patientAdmin.close(), 1_000);
      await settlesWithin(Promise.all(queues.map((queue) => queue.close())), 1_000);
      for (const connection of forQueues.owned ? [forQueues.connection, redis] : [redis]) {
        if (connection.status === 'ready') await settlesWithin(connection.quit(), 1_000);
        connection.disconnect();
      }
      logger.info('ingest stopped');
    },
  };
}
