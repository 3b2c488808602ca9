import type { AddressInfo } from 'node:net';
import type { Config } from '../config/config-schema.ts';
import { logListenerSecurity } from '../connections/listener-security-log.ts';
import { startMllpServer } from '../ingest/hl7v2/mllp-server.ts';
import type { Logger } from '../observability/logger.ts';
import { App, crosswalkKeysFrom } from '../app/compose-app.ts';
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
import { RedisRefusalGate } from './redis-refusal-gate.ts';
import { logRedisPersistence } from '../queues/redis-persistence.ts';
import { roleTracing } from './role-tracing.ts';

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
  // Before anything is built: an invalid OTEL_* value fails the start (ERR_TRACING_ENV).
  const { tracing, owned: ownsTracing } = await roleTracing(options.tracing, 'ingest', logger);
  const keys = crosswalkKeysFrom(config);
  const redis = requestConnection(config.redis, 'cw-ingest', {
    commandTimeoutMs: config.redis.command_timeout_ms,
  });
  // Redis refusing our credentials or ACL ends the start-up: waiting would not help.
  const refusal = new RedisRefusalGate(config.redis.url);
  const outages = new RedisOutageLog({
    logger,
    onRefused: (reply) => refusal.refuse(reply),
    redisUrl: config.redis.url,
  }).watch(redis);
  const app = App.compose(config, logger, {
    redis,
    keys,
    registry: options.registry,
    tracing,
  });
  // On a Redis Cluster the queue gets a copy of the connection that waits for the cluster.
  const forQueues = queueConnectionFor(redis);
  if (forQueues.owned) outages.watch(forQueues.connection);
  // The query queue of every partition, of the design before the due sets: purges and opt-outs
  // still remove a patient's jobs from it, and /metrics counts them.
  const queues = app.queriesQueues(forQueues.connection);
  for (const queue of queues) outages.listen(queue.name, queue);
  const unwatchQueues = app.pipelineMetrics.watchQueues(
    ...queues.map((queue, partition) => ({ queue, partition })),
  );
  const unwatchRedis = app.pipelineMetrics.watchRedis(() => redisAnswers(redis));
  const unwatch = () => {
    unwatchQueues();
    unwatchRedis();
  };
  let serving = false;
  const parts = app.ingestParts();
  // Purge and opt-out (ADMIN_TOKENS); the stores a purge erases are listed in patientAdminFor.
  const patientAdmin = app.patientAdmin(queues);
  const admin = patientAdmin.admin;
  const { updates } = parts;
  // The operator's queue view (admin.queue_view.enabled), on the queues' connection.
  const queueView = app.queueView(forQueues.connection);
  const ingestApp = await app.ingestApp({ ...parts, admin, queueView, isReady: () => serving });
  let health: HealthServer | undefined;
  if (options.healthServer !== false) {
    health = await startHealthServer({
      port: config.worker.metrics_port,
      host: config.worker.host,
      metrics: app.metrics,
      checks: { redis: () => redisAnswers(redis), ingest: () => serving },
    });
    logger.info({ url: health.url }, 'health server listening');
  }
  const url = await ingestApp.listen({ port: config.ingest.port, host: config.ingest.host });
  // Whether the ingest port is TLS (a warning when a production process serves it plain).
  logListenerSecurity(logger, {
    listener: 'ingest',
    port: (ingestApp.server.address() as AddressInfo).port,
    tls: config.ingest.tls.cert_file !== null && config.ingest.tls.key_file !== null,
    clientCertificates: config.ingest.tls.client_certificates,
  });
  const mllp = config.hl7v2.mllp.enabled
    ? await startMllpServer({
        config: config.hl7v2,
        updates,
        patients: admin,
        registry: app.metrics,
        logger,
        tracer: tracing.enabled ? tracing.tracer : undefined,
      })
    : undefined;
  logger.info({ url, mllp_port: mllp?.port }, 'ingest ports open');
  // The queue's connection set-up waits for Redis, however long it is away, but not when it
  // refuses our credentials or ACL (the start-up fails). `ingest listening` means serving (what
  // scripts and tests wait for).
  const queuesReady = refusal.guard(Promise.all(queues.map((queue) => queue.waitUntilReady())));
  const ready = queuesReady.then(() => {
    serving = true;
    // Once per start: whether Redis keeps the crosswalk on disk (a warning when it keeps nothing).
    void logRedisPersistence(forQueues.connection, logger);
    logger.info({ url, mllp_port: mllp?.port }, 'ingest listening');
  });
  ready.catch(() => undefined);
  return {
    url,
    healthUrl: health?.url ?? url,
    ready,
    async close() {
      await mllp?.close();
      await ingestApp.close();
      await health?.close();
      unwatch();
      outages.stop();
      await settlesWithin(patientAdmin.close(), 1_000);
      await settlesWithin(Promise.all(queues.map((queue) => queue.close())), 1_000);
      for (const connection of forQueues.owned ? [forQueues.connection, redis] : [redis]) {
        if (connection.status === 'ready') await settlesWithin(connection.quit(), 1_000);
        connection.disconnect();
      }
      // The spans of the last requests are exported (bounded by the export timeout).
      if (ownsTracing) await tracing.shutdown();
      logger.info('ingest stopped');
    },
  };
}
