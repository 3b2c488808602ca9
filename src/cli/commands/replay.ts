import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../../config/load-config.ts';
import type { DeadLetter } from '../../delivery/dead-letter.ts';
import { DeadLetterStore } from '../../delivery/dead-letter-store.ts';
import { replayDeadLetters } from '../../delivery/replay-dead-letters.ts';
import { WebhookChannel } from '../../delivery/webhook-channel.ts';
import { createLogger } from '../../observability/logger.ts';
import { Partitions } from '../../queues/partitions.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import { crosswalkKeysFrom } from '../../app/compose-app.ts';
import { auditCliAction } from '../cli-audit.ts';

interface ReplayOptions {
  since?: Date;
  category?: string;
  dryRun?: boolean;
}

function instant(raw: string): Date {
  const at = new Date(raw);
  if (Number.isNaN(at.getTime())) {
    throw new InvalidArgumentError(
      'expected a date or time, e.g. 2026-11-02 or 2026-11-02T08:00:00Z',
    );
  }
  return at;
}

const lastError = (letter: DeadLetter) =>
  letter.last_error.status === null
    ? letter.last_error.code
    : `${letter.last_error.code} (HTTP ${letter.last_error.status})`;

/** `concordance-worker replay`: re-drives dead-lettered webhook deliveries. */
export function registerReplayCommand(program: Command): void {
  program
    .command('replay')
    .description(
      'send dead-lettered webhook deliveries again (oldest event first); a webhook worker delivers them',
    )
    .option('--since <time>', 'only events created at or after this time (ISO 8601)', instant)
    .option('--category <ccsr>', 'only events of this CCSR category')
    .option('--dry-run', 'list what would be re-driven and change nothing')
    .action(async (options: ReplayOptions) => {
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      // Dead letters rest sealed with the crosswalk keys.
      const keys = crosswalkKeysFrom(config);
      // Fails fast when Redis is unreachable, instead of waiting for it like a worker would.
      const redis = requestConnection(config.redis, 'cw-replay', { enableOfflineQueue: true });
      const partitions = Partitions.of(config.redis);
      const channel = new WebhookChannel({ connection: redis, prefix: partitions, keys });
      try {
        // Letters are kept in their patient's partition: each partition's, oldest event first
        // (a key's events are all in one partition, so their order holds).
        const replayed = [];
        for (const partitionPrefix of partitions.prefixes) {
          const deadLetters = new DeadLetterStore({
            redis,
            prefix: partitionPrefix,
            keys,
            retentionDays: config.delivery.dead_letters.retention_days,
          });
          replayed.push(
            ...(await replayDeadLetters({
              deadLetters,
              channel,
              filter: { since: options.since, category: options.category },
              dryRun: options.dryRun === true,
            })),
          );
        }
        for (const { letter, outcome } of replayed) {
          const { event } = letter;
          const note = outcome === undefined || outcome === 'requeued' ? '' : `  (${outcome})`;
          process.stdout.write(
            `${event.id}  ${event.ccsr_category}  ${event.created_at}  ${lastError(letter)}${note}\n`,
          );
        }
        if (options.dryRun !== true) {
          // A replay sends patient data again: it is audited (who, when, how many; no patient).
          const logger = createLogger({ name: 'cli', level: config.log.level });
          await auditCliAction({ config, redis, logger }, 'replay', {
            dead_letters: replayed.length,
          });
          logger.flush();
        }
        process.stdout.write(
          options.dryRun === true
            ? `${replayed.length} dead letter(s) would be re-driven (dry run: nothing changed)\n`
            : `${replayed.length} dead letter(s) re-driven\n`,
        );
      } finally {
        await channel.close();
        await redis.quit();
      }
    });
}
