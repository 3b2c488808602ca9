import closeWithGrace from 'close-with-grace';
import type { Command } from 'commander';
import type { Config } from '../config/config-schema.ts';
import { loadConfig } from '../config/load-config.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import type { RunningProcess } from '../runtime/run-worker.ts';

/**
 * Loads the configuration once, starts a long-running role, and closes it gracefully on
 * SIGINT/SIGTERM: exit 0 once closed; a second signal, or `shutdown.grace_ms` without the close
 * ending, exits 1 at once. A start-up that fails after the ports opened (not for want of Redis,
 * which the role waits for) is logged and exits 1.
 */
export async function runProcess(
  program: Command,
  role: string,
  start: (config: Config, logger: Logger) => Promise<RunningProcess>,
): Promise<void> {
  const config = loadConfig({ file: program.opts<{ config?: string }>().config });
  const logger = createLogger({ level: config.log.level, name: role });
  const running = await start(config, logger);
  const graceMs = config.shutdown.grace_ms;
  let stopping = false;
  const closer = closeWithGrace(
    {
      delay: graceMs,
      logger: false,
      onTimeout: () => logger.error({ grace_ms: graceMs }, 'shutdown took too long: exiting'),
    },
    async ({ signal, err }) => {
      stopping = true;
      const started = Date.now();
      if (err)
        logger.error({ err: { name: err.name, message: err.message } }, 'stopping after an error');
      else logger.info({ signal, grace_ms: graceMs }, 'stopping');
      await running.close();
      logger.info({ shutdown_ms: Date.now() - started }, 'stopped');
      logger.flush();
    },
  );
  running.ready.catch((err: unknown) => {
    // A start-up cut short by the shutdown is no failure.
    if (stopping) return;
    stopping = true;
    const e = err instanceof Error ? err : new Error(String(err));
    logger.error({ err: { name: e.name, message: e.message } }, 'start-up failed');
    closer.uninstall();
    setTimeout(() => process.exit(1), graceMs).unref();
    void running.close().finally(() => {
      logger.flush();
      process.exit(1);
    });
  });
}
