import type { Config } from '../config/config-schema.ts';
import type { Logger } from '../observability/logger.ts';
import { processRegistry } from '../observability/process-registry.ts';
import { assertRoleConfig } from './role-problems.ts';
import { runIngest } from './run-ingest.ts';
import { runWorker, type RunningProcess } from './run-worker.ts';
import { startRoleTracing } from './role-tracing.ts';

/**
 * `concordance-worker start`: ingest and workers in one process (small sites, demos). One process,
 * one metrics registry: the ingest API's `/metrics` and the health port's serve the same numbers
 * (scrape one of them). One health port (`worker.metrics_port`): its `/readyz` holds while Redis
 * answers, the workers run and the ingest serves.
 */
export async function runAll(config: Config, logger: Logger): Promise<RunningProcess> {
  assertRoleConfig(config, 'start');
  // One tracing for both roles (one process): started before either, shut down after both.
  const tracing = await startRoleTracing('start', logger);
  const registry = processRegistry();
  let ingestServing = false;
  const worker = await runWorker(config, logger.child({ role: 'work' }), {
    registry,
    checks: { ingest: () => ingestServing },
    tracing,
  }).catch(async (err: unknown) => {
    await tracing.shutdown();
    throw err;
  });
  try {
    const ingest = await runIngest(config, logger.child({ role: 'ingest' }), {
      registry,
      healthServer: false,
      tracing,
    });
    ingest.ready.then(
      () => (ingestServing = true),
      () => undefined,
    );
    return {
      url: ingest.url,
      healthUrl: worker.healthUrl,
      ready: Promise.all([worker.ready, ingest.ready]).then(() => undefined),
      // In parallel, so that both fit in one shutdown grace period: the ingest stops accepting
      // at once either way, and what it had accepted is in Redis for the next worker.
      async close() {
        await Promise.all([ingest.close(), worker.close()]);
        await tracing.shutdown();
      },
    };
  } catch (err) {
    await worker.close();
    await tracing.shutdown();
    throw err;
  }
}
