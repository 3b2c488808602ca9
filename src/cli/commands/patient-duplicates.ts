import type { Command } from 'commander';
import { crosswalkKeysFrom } from '../../app/compose-app.ts';
import { loadConfig } from '../../config/load-config.ts';
import { Crosswalk } from '../../identity/crosswalk.ts';
import {
  findProbableDuplicates,
  type DuplicateCount,
  type DuplicatePair,
} from '../../identity/probable-duplicates.ts';
import { createLogger } from '../../observability/logger.ts';
import { Partitions } from '../../queues/partitions.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import { auditCliAction } from '../cli-audit.ts';

interface DuplicatesOptions {
  show?: boolean;
  json?: boolean;
}

function describe(count: DuplicateCount, pairs: DuplicatePair[] | undefined): string[] {
  const lines = [
    `patients: ${count.patients}`,
    `probable duplicates: ${count.probable_duplicates} (an <authority>|<id> key whose id alone is also a patient)`,
    ...Object.entries(count.by_authority).map(([authority, n]) => `  authority ${authority}: ${n}`),
  ];
  if (count.unreadable > 0) {
    lines.push(`unreadable entries (not opened by the crosswalk keys): ${count.unreadable}`);
  }
  if (count.probable_duplicates > 0 && pairs === undefined) {
    lines.push(
      'the ids are not shown (patient data): --show prints them; see docs/clinical-feeds.md, "One key across feeds"',
    );
  }
  for (const pair of pairs ?? []) lines.push(`  ${pair.qualified}  ~  ${pair.bare}`);
  return lines;
}

/**
 * `concordance-worker patient duplicates [--show] [--json]`: counts the patients that are probably
 * one person under two keys (see `findProbableDuplicates`). Counts only, unless `--show`, which
 * prints the local ids (patient data) and is audited.
 */
export function registerPatientDuplicates(patient: Command, program: Command): void {
  patient
    .command('duplicates')
    .description(
      'count patients probably stored twice (<authority>|<id> beside <id>); reads only, prints no id without --show',
    )
    .option('--show', 'also print the local ids of each pair (patient data; audited)')
    .option('--json', 'print the report as JSON')
    .action(async (options: DuplicatesOptions) => {
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      const keys = crosswalkKeysFrom(config);
      const redis = requestConnection(config.redis, 'cw-patient', { enableOfflineQueue: true });
      const logger = createLogger({ name: 'cli', level: config.log.level });
      const prefix = Partitions.of(config.redis);
      try {
        const found = await findProbableDuplicates({
          redis,
          prefix,
          crosswalk: new Crosswalk({ redis, prefix, keys }),
        });
        const pairs = options.show === true ? found.pairs : undefined;
        if (pairs !== undefined) {
          // Local ids leave the service: who saw how many is audited (no patient in the entry).
          await auditCliAction({ config, redis, logger }, 'show_duplicates', {
            probable_duplicates: pairs.length,
          });
        }
        process.stdout.write(
          options.json === true
            ? `${JSON.stringify({ ...found.count, ...(pairs === undefined ? {} : { pairs }) }, null, 2)}\n`
            : `${describe(found.count, pairs).join('\n')}\n`,
        );
      } finally {
        await redis.quit();
        logger.flush();
      }
    });
}
