import closeWithGrace from 'close-with-grace';
import type { Command } from 'commander';
import type { Config } from '../config/config-schema.ts';
import { loadConfig } from '../config/load-config.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import type { RunningProcess } from '../runtime/run-worker.ts';

/**
 * Loads the configuration once, starts a long-running role, and closes it gracefully on
 * SIGINT/SIGTERM (a second signal, or 10 s, ends the process at once).
 */
export async function runProcess(
  program: Command,
  role: string,
  start: (config: Config, logger: Logger) => Promise<RunningProcess>,
): Promise<void> {
  const config = loadConfig({ file: program.opts<{ config?: string }>().config });
  const logger = createLogger({ level: config.log.level, name: role });
  const running = await start(config, logger);
  closeWithGrace({ delay: 10_000, logger: false }, async ({ signal, err }) => {
    if (err)
      logger.error({ err: { name: err.name, message: err.message } }, 'stopping after an error');
    else logger.info({ signal }, 'stopping');
    await running.close();
    logger.flush();
  });
}
