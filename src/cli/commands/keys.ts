import { Queue } from 'bullmq';
import type { Command } from 'commander';
import { loadConfig } from '../../config/load-config.ts';
import { outboundAesKey } from '../../delivery/outbound-seal.ts';
import { WEBHOOK_DELIVERIES } from '../../delivery/webhook-deliveries-queue.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../../identity/crosswalk-keys.ts';
import { rotateKeys, type RotationReport } from '../../identity/rotate-keys.ts';
import { CONCORDANCE_QUERIES } from '../../queues/queue-names.ts';
import { Partitions } from '../../queues/partitions.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import { StartupError } from '../../config/startup-error.ts';

interface RotateOptions {
  crosswalkFromEnv?: string;
  outboundFromEnv?: string;
  dryRun?: boolean;
  force?: boolean;
}

function fromEnv(variable: string): string {
  const value = process.env[variable];
  if (value === undefined || value === '') throw new StartupError(`${variable} is not set`);
  return value;
}

/**
 * `concordance-worker keys`: a fresh key, and the re-sealing of everything under a new
 * `CROSSWALK_KEY` / `OUTBOUND_KEY`. The old keys are named by environment variable, never given
 * on the command line (where `ps` and shell history would see them).
 */
export function registerKeysCommand(program: Command): void {
  const keys = program.command('keys').description('encryption keys: generate, rotate');
  keys
    .command('generate')
    .description('print a fresh random key (32 bytes, base64) for CROSSWALK_KEY or OUTBOUND_KEY')
    .action(() => {
      process.stdout.write(`${generateCrosswalkSecret()}\n`);
    });
  keys
    .command('rotate')
    .description(
      're-seal everything under the new CROSSWALK_KEY / OUTBOUND_KEY (as configured) that the old key (named by --*-from-env) sealed; run with the pipeline stopped; safe to run again',
    )
    .option(
      '--crosswalk-from-env <variable>',
      'the environment variable holding the old CROSSWALK_KEY',
    )
    .option(
      '--outbound-from-env <variable>',
      'the environment variable holding the old OUTBOUND_KEY',
    )
    .option('--dry-run', 'count what would be re-sealed and change nothing')
    .option('--force', 'run even though queue workers are connected (not recommended)')
    .action(async (options: RotateOptions) => {
      if (options.crosswalkFromEnv === undefined && options.outboundFromEnv === undefined) {
        throw new StartupError('name an old key: --crosswalk-from-env and/or --outbound-from-env');
      }
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      let crosswalk;
      if (options.crosswalkFromEnv !== undefined) {
        const to = config.identity.crosswalk_key;
        if (to === undefined) throw new StartupError('CROSSWALK_KEY (the new key) is not set');
        const from = fromEnv(options.crosswalkFromEnv);
        if (from.trim() === to.trim()) {
          throw new StartupError(`${options.crosswalkFromEnv} and CROSSWALK_KEY are the same key`);
        }
        crosswalk = { from: deriveCrosswalkKeys(from), to: deriveCrosswalkKeys(to) };
      }
      let outbound;
      if (options.outboundFromEnv !== undefined) {
        const to = config.delivery.outbound_queue.key;
        if (to === undefined) throw new StartupError('OUTBOUND_KEY (the new key) is not set');
        const from = fromEnv(options.outboundFromEnv);
        if (from.trim() === to.trim()) {
          throw new StartupError(`${options.outboundFromEnv} and OUTBOUND_KEY are the same key`);
        }
        outboundAesKey(from);
        outbound = { from, to, queueName: config.delivery.outbound_queue.name };
      }
      const redis = requestConnection(config.redis, 'cw-keys-rotate', {
        enableOfflineQueue: true,
      });
      try {
        if (options.force !== true && options.dryRun !== true) {
          const queues = Partitions.of(config.redis).prefixes.flatMap((prefix) =>
            [CONCORDANCE_QUERIES, WEBHOOK_DELIVERIES].map((name) => ({ name, prefix })),
          );
          for (const { name, prefix } of queues) {
            const queue = new Queue(name, { connection: redis, prefix });
            const workers = await queue.getWorkersCount().finally(() => queue.close());
            if (workers > 0) {
              throw new StartupError(
                `${workers} worker(s) of ${name} are connected: stop the pipeline first (or --force)`,
              );
            }
          }
        }
        const report: RotationReport = await rotateKeys({
          redis,
          prefix: Partitions.of(config.redis),
          crosswalk,
          outbound,
          dryRun: options.dryRun === true,
        });
        let unreadable = 0;
        for (const [kind, count] of Object.entries(report)) {
          unreadable += count.unreadable;
          process.stdout.write(
            `${kind.padEnd(16)} resealed ${count.resealed}  already ${count.already}  unreadable ${count.unreadable}\n`,
          );
        }
        process.stdout.write(
          options.dryRun === true
            ? 'dry run: nothing changed\n'
            : unreadable === 0
              ? 'done: everything is under the new key(s)\n'
              : `${unreadable} item(s) open with neither key and were left as they are\n`,
        );
        if (unreadable > 0) process.exitCode = 1;
      } finally {
        await redis.quit();
      }
    });
}
