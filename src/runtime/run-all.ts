import type { Config } from '../config/config-schema.ts';
import type { Logger } from '../observability/logger.ts';
import { runIngest } from './run-ingest.ts';
import { runWorker, type RunningProcess } from './run-worker.ts';

/** `concordance-worker start`: ingest and workers in one process (small sites, demos). */
export async function runAll(config: Config, logger: Logger): Promise<RunningProcess> {
  const worker = await runWorker(config, logger.child({ role: 'work' }));
  try {
    const ingest = await runIngest(config, logger.child({ role: 'ingest' }));
    return {
      url: ingest.url,
      async close() {
        await ingest.close();
        await worker.close();
      },
    };
  } catch (err) {
    await worker.close();
    throw err;
  }
}
