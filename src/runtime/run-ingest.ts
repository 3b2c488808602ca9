import type { Config } from '../config/config-schema.ts';
import { buildIngestApp } from '../ingest/build-ingest-app.ts';
import { ClinicalUpdates } from '../ingest/clinical-updates.ts';
import { startMllpServer } from '../ingest/hl7v2/mllp-server.ts';
import type { Logger } from '../observability/logger.ts';
import { PresetStore } from '../presets/preset-store.ts';
import { requestConnection } from '../queues/redis-connections.ts';
import { UpdateCommitter } from '../ingest/update-committer.ts';
import { crosswalkKeysFrom, pipelineContext, queriesQueue } from './pipeline-context.ts';
import { patientAdminFor } from './patient-admin-for.ts';
import type { RoleOptions, RunningProcess } from './run-worker.ts';
import { assertRoleConfig } from './role-problems.ts';

/** `concordance-worker ingest`: the HTTP API that accepts record updates and presets. */
export async function runIngest(
  config: Config,
  logger: Logger,
  options: RoleOptions = {},
): Promise<RunningProcess> {
  assertRoleConfig(config, 'ingest');
  const keys = crosswalkKeysFrom(config);
  const redis = requestConnection(config.redis, 'cw-ingest');
  const context = pipelineContext(config, logger, redis, keys, options.registry);
  const queue = queriesQueue(context, redis);
  const unwatch = context.pipelineMetrics.watchQueues(queue);
  // A request connection refuses commands until it is ready: serve only after that.
  await queue.waitUntilReady();
  const presets = new PresetStore({ redis, prefix: context.prefix });
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
    }),
    logger,
    metrics: { registry: context.metrics },
  };
  const updates = ClinicalUpdates.fromDeps(deps);
  // Purge and opt-out (ADMIN_TOKENS); the stores a purge erases are listed in patientAdminFor.
  const patientAdmin = patientAdminFor({ config, redis, keys, logger, queue });
  const admin = patientAdmin.admin;
  const app = await buildIngestApp({ ...deps, updates, admin });
  const url = await app.listen({ port: config.ingest.port, host: config.ingest.host });
  const mllp = config.hl7v2.mllp.enabled
    ? await startMllpServer({ config: config.hl7v2, updates, registry: context.metrics, logger })
    : undefined;
  logger.info({ url, mllp_port: mllp?.port }, 'ingest listening');
  return {
    url,
    async close() {
      await mllp?.close();
      await app.close();
      unwatch();
      await patientAdmin.close();
      await queue.close();
      await redis.quit();
      logger.info('ingest stopped');
    },
  };
}
