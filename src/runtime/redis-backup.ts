import {
  BACKUP_KINDS,
  type BackupContent,
  type BackupEntry,
  type BackupHeader,
  type BackupKind,
} from '../identity/backup-file.ts';
import { BackupLayoutError, BackupTargetNotEmptyError } from '../identity/backup-errors.ts';
import type { Partitions } from '../queues/partitions.ts';
import { globLiteral, scanEach, type RedisClient } from '../queues/redis-client.ts';

/**
 * Reading and writing what a backup holds (docs/backup-and-recovery.md): per partition, the keys
 * of the crosswalk (`xw` lookup entries, `xwr` sealed local ids, `xwm` merges), the records
 * (`rec`), the presets (`presets`), the opaque FHIR ids (`fhir`) and the opt-outs (`optout`), each
 * as its `DUMP` with its expiry. The file format is `src/identity/backup-file.ts`.
 */

const KINDS = new Set<string>(BACKUP_KINDS);

/** The kind of `key` under `prefix` when a backup holds it (`<prefix>:<kind>:<id>`). */
export function backupKindOf(prefix: string, key: string): BackupKind | undefined {
  if (!key.startsWith(`${prefix}:`)) return undefined;
  const rest = key.slice(prefix.length + 1);
  const colon = rest.indexOf(':');
  if (colon <= 0 || colon === rest.length - 1) return undefined;
  const kind = rest.slice(0, colon);
  return KINDS.has(kind) ? (kind as BackupKind) : undefined;
}

/** The keys of a partition that a backup holds. */
async function listKeys(redis: RedisClient, prefix: string): Promise<Set<string>> {
  const found = new Set<string>();
  for await (const keys of scanEach(redis, `${globLiteral(prefix)}:*`, { count: 1_000 })) {
    for (const key of keys) if (backupKindOf(prefix, key) !== undefined) found.add(key);
  }
  return found;
}

/** One `MULTI`/`EXEC` over `names`: the server's time, and each key's DUMP, expiry and owner. */
async function readAtOnce(
  redis: RedisClient,
  prefix: string,
  names: readonly string[],
): Promise<{ readAt: number; entries: (BackupEntry & { owner: string | undefined })[] }> {
  const multi = redis.multi().time();
  for (const key of names) {
    multi.dumpBuffer(key).pexpiretime(key);
    // A lookup entry names its patient inside (the service id): read with it.
    if (backupKindOf(prefix, key) === 'xw') multi.hget(key, 'psid');
  }
  const replies = await multi.exec();
  if (replies === null) throw new Error('the backup transaction was aborted');
  const value = (i: number): unknown => {
    const [err, result] = replies[i] ?? [new Error('no reply'), null];
    if (err) throw err;
    return result;
  };
  const [seconds, micros] = value(0) as [string, string];
  const entries: (BackupEntry & { owner: string | undefined })[] = [];
  let i = 1;
  for (const key of names) {
    const dump = value(i++) as Buffer | null;
    const expireAt = value(i++) as number;
    const kind = backupKindOf(prefix, key);
    const owner =
      kind === 'xw'
        ? ((value(i++) as string | null) ?? undefined)
        : key.slice(key.indexOf(':', prefix.length + 1) + 1);
    // Gone since the scan (expired, purged): not in this state.
    if (dump === null || expireAt === -2) continue;
    entries.push(Object.assign([key, expireAt, dump.toString('base64')] as BackupEntry, { owner }));
  }
  return { readAt: Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000), entries };
}

/** How many times a partition is read again when keys appeared meanwhile. */
const MAX_ROUNDS = 3;

export interface PartitionRead {
  prefix: string;
  readAt: number;
  entries: BackupEntry[];
  /** Keys of patients created while the partition was read, left out (the next backup has them). */
  leftOut: number;
}

/**
 * One partition's keys as of one instant. The key names come from a SCAN (which no transaction
 * can hold), the values from one `MULTI`/`EXEC` (a partition's keys share a hash tag, so they are
 * on one node): every change of the pipeline is one script or command, so that instant is between
 * two changes and the values agree with each other. A SCAN after the EXEC finds the keys created
 * since the first one: the partition is read again with them (up to {@link MAX_ROUNDS} times).
 * Keys that keep appearing (ingest at work) are the new patients' of those last moments: a patient
 * one of whose crosswalk keys (`xw`, `xwr`) appeared after the read is left out whole, so that no
 * patient is in the backup in part; other keys that appeared after it are changes after that
 * instant.
 */
export async function readPartition(redis: RedisClient, prefix: string): Promise<PartitionRead> {
  let names = await listKeys(redis, prefix);
  for (let round = 1; ; round++) {
    const read = await readAtOnce(redis, prefix, [...names]);
    const later = await listKeys(redis, prefix);
    const appeared = [...later].filter((key) => !names.has(key));
    if (appeared.length > 0 && round < MAX_ROUNDS) {
      names = new Set([...names, ...appeared]);
      continue;
    }
    // The patients created meanwhile: a crosswalk entry (either of its two keys) appeared.
    const created = new Set(
      appeared
        .filter((key) => backupKindOf(prefix, key) === 'xwr')
        .map((key) => key.slice(`${prefix}:xwr:`.length)),
    );
    const lookups = appeared.filter((key) => backupKindOf(prefix, key) === 'xw');
    for (const psid of await Promise.all(lookups.map((key) => redis.hget(key, 'psid')))) {
      if (psid !== null) created.add(psid);
    }
    const kept = read.entries.filter((e) => e.owner === undefined || !created.has(e.owner));
    return {
      prefix,
      readAt: read.readAt,
      entries: kept.map(([key, expireAt, dump]) => [key, expireAt, dump] as BackupEntry),
      leftOut: appeared.length + read.entries.length - kept.length,
    };
  }
}

/** Every partition's keys, each partition as of its own instant ({@link readPartition}). */
export async function takeBackup(
  redis: RedisClient,
  partitions: Partitions,
): Promise<{
  content: BackupContent;
  keys: Record<BackupKind, number>[];
  leftOut: number;
}> {
  const content: BackupContent = { partitions: [] };
  const keys: Record<BackupKind, number>[] = [];
  let leftOut = 0;
  for (const prefix of partitions.prefixes) {
    const read = await readPartition(redis, prefix);
    content.partitions.push({ prefix, read_at: read.readAt, entries: read.entries });
    keys.push(countKinds(prefix, read.entries));
    leftOut += read.leftOut;
  }
  return { content, keys, leftOut };
}

/** Keys per kind. */
function countKinds(prefix: string, entries: readonly BackupEntry[]): Record<BackupKind, number> {
  const counts = Object.fromEntries(BACKUP_KINDS.map((k) => [k, 0])) as Record<BackupKind, number>;
  for (const [key] of entries) {
    const kind = backupKindOf(prefix, key);
    if (kind !== undefined) counts[kind] += 1;
  }
  return counts;
}

/** How many keys of the kinds a backup holds `partitions` of the Redis already have. */
export async function keysPresent(redis: RedisClient, partitions: Partitions): Promise<number> {
  let n = 0;
  for (const prefix of partitions.prefixes) n += (await listKeys(redis, prefix)).size;
  return n;
}

export interface RestoreReport {
  restored: number;
  /** Keys whose expiry had passed by the restore: not written. */
  expired: number;
}

/** Keys written per `MULTI`/`EXEC` of a restore. */
const RESTORE_BATCH = 500;

/**
 * Writes a backup's keys back (`RESTORE … ABSTTL`, so that each key expires when it would have).
 * Refuses ({@link BackupLayoutError}) a backup of another prefix or partitions, and
 * ({@link BackupTargetNotEmptyError}) a Redis that already holds keys of the kinds a backup holds,
 * unless `force` (then the backup's keys replace those of the same names; others stay).
 */
export async function restoreBackup(
  redis: RedisClient,
  partitions: Partitions,
  header: BackupHeader,
  content: BackupContent,
  { force = false, now = Date.now }: { force?: boolean; now?: () => number } = {},
): Promise<RestoreReport> {
  if (header.prefix !== partitions.base || header.partitions !== partitions.count) {
    throw new BackupLayoutError(
      `the backup is of prefix ${header.prefix} with ${header.partitions} partition(s); this configuration has ${partitions.base} with ${partitions.count}: restore with the backup's REDIS_PREFIX and REDIS_PARTITIONS (then \`redis repartition\` if needed)`,
    );
  }
  const prefixes = content.partitions.map((p) => p.prefix);
  if (prefixes.join('\n') !== partitions.prefixes.join('\n')) {
    throw new BackupLayoutError(
      'the backup names other partition prefixes than this configuration',
    );
  }
  if (!force) {
    const present = await keysPresent(redis, partitions);
    if (present > 0) {
      throw new BackupTargetNotEmptyError(
        `Redis already holds ${present} key(s) of the crosswalk, records or presets under ${partitions.base}: restore into an empty Redis, or --force to overwrite the backup's keys`,
      );
    }
  }
  const report: RestoreReport = { restored: 0, expired: 0 };
  for (const partition of content.partitions) {
    for (let from = 0; from < partition.entries.length; from += RESTORE_BATCH) {
      const batch = partition.entries.slice(from, from + RESTORE_BATCH);
      const at = now();
      const multi = redis.multi();
      let queued = 0;
      for (const [key, expireAt, dump] of batch) {
        if (expireAt >= 0 && expireAt <= at) {
          report.expired += 1;
          continue;
        }
        const ttl = expireAt >= 0 ? expireAt : 0;
        const payload = Buffer.from(dump, 'base64');
        if (force) multi.restore(key, ttl, payload, 'REPLACE', 'ABSTTL');
        else multi.restore(key, ttl, payload, 'ABSTTL');
        queued += 1;
      }
      if (queued === 0) continue;
      const replies = (await multi.exec()) ?? [];
      for (const [err] of replies) {
        if (err) throw err;
        report.restored += 1;
      }
    }
  }
  return report;
}
