import { Queue } from 'bullmq';
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../../config/load-config.ts';
import { MAX_PARTITIONS } from '../../config/redis-partitioning.ts';
import { migrateQueryJobs } from '../../queries/migrate-query-jobs.ts';
import { QueryState } from '../../queries/query-state.ts';
import { Partitions } from '../../queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../../queues/queue-names.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import { repartition } from '../../runtime/repartition.ts';
import { StartupError } from '../../config/startup-error.ts';
import { registerRedisBackupCommands } from './redis-backup.ts';

function partitionCount(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PARTITIONS) {
    throw new InvalidArgumentError(`a whole number from 1 to ${MAX_PARTITIONS}`);
  }
  return n;
}

/** `concordance-worker redis`: operations on the pipeline's Redis data. */
export function registerRedisCommand(program: Command): void {
  const redis = program.command('redis').description("operations on the pipeline's Redis data");
  redis
    .command('repartition')
    .description(
      'move the data of a drained, stopped pipeline from --from partitions to REDIS_PARTITIONS (docs/deployment.md, "Scale out"); safe to run again',
    )
    .requiredOption('--from <n>', 'the partitions the data was written with', partitionCount)
    .option('--dry-run', 'count what would move and change nothing')
    .action(async (options: { from: number; dryRun?: boolean }) => {
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      const to = Partitions.of(config.redis);
      if (options.from === to.count) {
        throw new StartupError(
          `REDIS_PARTITIONS is already ${to.count}: set it to the partitions wanted, --from to those the data has`,
        );
      }
      const from = new Partitions(config.redis.prefix, options.from);
      const connection = requestConnection(config.redis, 'cw-repartition', {
        enableOfflineQueue: true,
      });
      try {
        const report = await repartition({
          redis: connection,
          from,
          to,
          dryRun: options.dryRun === true,
        });
        const moved = Object.entries(report.moved)
          .map(([kind, n]) => `${kind} ${n}`)
          .join(', ');
        process.stdout.write(
          [
            `partitions ${from.count} -> ${to.count} (${to.prefixes.join(' ')})`,
            `keys moved: ${moved === '' ? 'none' : moved}`,
            `keys already in place: ${report.kept}`,
            `dead letters moved: ${report.dead_letters_moved}`,
            `drained queue keys deleted: ${report.deleted}`,
            options.dryRun === true
              ? 'dry run: nothing changed'
              : `done: start the pipeline with REDIS_PARTITIONS=${to.count}`,
          ].join('\n') + '\n',
        );
      } finally {
        await connection.quit();
      }
    });
  redis
    .command('migrate-query-jobs')
    .description(
      'move the query jobs of 0.1 still in concordance-queries into the outbox and the poll set (CHANGELOG, 0.3 upgrade); run once with the workers stopped; safe to run again',
    )
    .option('--dry-run', 'count what would move and change nothing')
    .action(async (options: { dryRun?: boolean }) => {
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      const partitions = Partitions.of(config.redis);
      const connection = requestConnection(config.redis, 'cw-migrate', {
        enableOfflineQueue: true,
      });
      const state = new QueryState({ redis: connection, prefix: partitions });
      const lines: string[] = [];
      try {
        for (const prefix of partitions.prefixes) {
          const queue = new Queue(CONCORDANCE_QUERIES, { connection, prefix });
          try {
            const moved = await migrateQueryJobs({
              queue,
              redis: connection,
              state,
              prefix,
              now: Date.now(),
              dryRun: options.dryRun === true,
            });
            lines.push(`${prefix}: to the outbox ${moved.outbox}, to the poll set ${moved.polls}`);
          } finally {
            await queue.close();
          }
        }
        lines.push(options.dryRun === true ? 'dry run: nothing changed' : 'done');
        process.stdout.write(lines.join('\n') + '\n');
      } finally {
        await connection.quit();
      }
    });
  registerRedisBackupCommands(redis, program);
}
