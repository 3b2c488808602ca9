import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Config } from '../../config/config-schema.ts';
import { loadConfig } from '../../config/load-config.ts';
import { StartupError } from '../../config/startup-error.ts';
import { isConcordanceError } from '../../errors/concordance-error.ts';
import {
  BACKUP_KINDS,
  openBackup,
  readBackupHeader,
  sealBackup,
  type BackupHeader,
} from '../../identity/backup-file.ts';
import { backupKeyFrom, type BackupKey } from '../../identity/backup-key.ts';
import { parseKeyringText } from '../../identity/crosswalk-keyring.ts';
import { Partitions } from '../../queues/partitions.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import type { RedisClient } from '../../queues/redis-client.ts';
import { restoreBackup, takeBackup } from '../../runtime/redis-backup.ts';

/** A backup reads a partition in one transaction: more time than a request's command timeout. */
const BACKUP_COMMAND_TIMEOUT_MS = 120_000;

/**
 * The keys a backup may be sealed with or opened by: one per secret of `CROSSWALK_KEYS` (the
 * sealing key's first, and it seals), or `CROSSWALK_KEY`'s.
 */
export function backupKeysOf(config: Pick<Config, 'identity'>): BackupKey[] {
  const { crosswalk_key: single, crosswalk_keys: ring } = config.identity;
  // The keyring's order: a backup is sealed under the sealing key (first), and a restore opens a
  // file sealed under any key still in the ring (an older backup, after a rotation).
  const secrets =
    ring !== undefined ? parseKeyringText(ring).map((entry) => entry.secret) : [single];
  const known = secrets.filter((secret): secret is string => secret !== undefined);
  if (known.length === 0) {
    throw new StartupError(
      'neither CROSSWALK_KEYS nor CROSSWALK_KEY is set: a backup is sealed with a key derived from the crosswalk key (docs/backup-and-recovery.md)',
    );
  }
  return known.map(backupKeyFrom);
}

/** Runs `work` on a connection for the backup commands, closed after. */
async function withRedis<T>(config: Config, work: (redis: RedisClient) => Promise<T>): Promise<T> {
  const redis = requestConnection(config.redis, 'cw-backup', {
    enableOfflineQueue: true,
    commandTimeoutMs: Math.max(config.redis.command_timeout_ms, BACKUP_COMMAND_TIMEOUT_MS),
  });
  try {
    return await work(redis);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

/** A backup error is printed with its code (`ERR_BACKUP_KEY: …`), exit 1; others go on up. */
async function reporting(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (err) {
    if (!isConcordanceError(err) || !err.code.startsWith('ERR_BACKUP_')) throw err;
    process.stderr.write(`concordance-worker: ${err.code}: ${err.message}\n`);
    process.exitCode = 1;
  }
}

/** The header in lines, as `backup-info` prints it (no key needed). */
export function headerLines(header: BackupHeader): string[] {
  const totals = Object.fromEntries(BACKUP_KINDS.map((k) => [k, 0])) as Record<string, number>;
  for (const partition of header.keys) {
    for (const kind of BACKUP_KINDS) totals[kind] = (totals[kind] ?? 0) + partition[kind];
  }
  return [
    `format: ${header.format} ${header.version}`,
    `created at: ${header.created_at}`,
    `prefix: ${header.prefix}, partitions: ${header.partitions}`,
    `keys: ${BACKUP_KINDS.map((k) => `${k} ${totals[k]}`).join(', ')}`,
    `left out (patients created while it was read): ${header.left_out}`,
    `sealed: ${header.cipher}, key ${header.kdf}, key id ${header.key_id}`,
  ];
}

/**
 * `concordance-worker redis backup|restore|backup-info`: a sealed copy of the crosswalk, records,
 * presets, FHIR ids and opt-outs, and its way back (docs/backup-and-recovery.md).
 */
export function registerRedisBackupCommands(redis: Command, program: Command): void {
  const configOf = () => loadConfig({ file: program.opts<{ config?: string }>().config });
  redis
    .command('backup')
    .description(
      'write a sealed copy of the crosswalk, records, presets, FHIR ids and opt-outs to a new file (docs/backup-and-recovery.md)',
    )
    .requiredOption('--out <file>', 'the file to write (must not exist)')
    .action((options: { out: string }) =>
      reporting(async () => {
        const config = configOf();
        const [key] = backupKeysOf(config) as [BackupKey];
        const partitions = Partitions.of(config.redis);
        const taken = await withRedis(config, (r) => takeBackup(r, partitions));
        const file = sealBackup(
          {
            created_at: new Date().toISOString(),
            prefix: partitions.base,
            partitions: partitions.count,
            keys: taken.keys,
            left_out: taken.leftOut,
          },
          taken.content,
          key,
        );
        // A new file, readable by its owner only; never over an older backup.
        writeFileSync(options.out, file, { flag: 'wx', mode: 0o600 });
        process.stdout.write(
          [...headerLines(readBackupHeader(file)), `written: ${options.out} (${file.length} bytes)`]
            .join('\n')
            .concat('\n'),
        );
      }),
    );
  redis
    .command('restore')
    .description(
      'write a backup back into an empty Redis, with its expiries; needs the CROSSWALK_KEY it was taken with (docs/backup-and-recovery.md)',
    )
    .requiredOption('--in <file>', 'the backup file')
    .option(
      '--force',
      "restore into a Redis that already holds data (the backup's keys replace theirs)",
    )
    .action((options: { in: string; force?: boolean }) =>
      reporting(async () => {
        const config = configOf();
        const { header, content } = openBackup(readFileSync(options.in), backupKeysOf(config));
        const partitions = Partitions.of(config.redis);
        const report = await withRedis(config, (r) =>
          restoreBackup(r, partitions, header, content, { force: options.force === true }),
        );
        process.stdout.write(
          [
            `backup of ${header.created_at} (prefix ${header.prefix}, ${header.partitions} partition(s))`,
            `keys restored: ${report.restored}`,
            `keys expired since the backup (not restored): ${report.expired}`,
            'done: start the pipeline (docs/backup-and-recovery.md, "After a restore")',
          ].join('\n') + '\n',
        );
      }),
    );
  redis
    .command('backup-info')
    .description(
      "print a backup's header: what it holds and the id of the key it needs (no key needed)",
    )
    .requiredOption('--in <file>', 'the backup file')
    .action((options: { in: string }) =>
      reporting(async () => {
        const header = readBackupHeader(readFileSync(options.in));
        const lines = headerLines(header);
        const secret = (await Promise.resolve(configOf())).identity.crosswalk_key;
        if (secret !== undefined) {
          const { id } = backupKeyFrom(secret);
          lines.push(
            `the CROSSWALK_KEY set here has key id ${id}: ${id === header.key_id ? 'it opens this backup' : 'it does not open this backup'}`,
          );
        }
        process.stdout.write(lines.join('\n') + '\n');
      }),
    );
}
