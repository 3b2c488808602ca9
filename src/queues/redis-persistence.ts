import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from './redis-client.ts';

/**
 * Whether Redis keeps its data on disk. Redis holds the only crosswalk between the hospital's
 * patient ids and the service ids, the records and the presets: a Redis that keeps nothing on
 * disk loses them all on a restart (docs/backup-and-recovery.md). Asked of each server (each
 * master of a Redis Cluster) with `CONFIG GET appendonly|appendfsync|save`, or, where the ACL
 * refuses `CONFIG` (managed Redis often does), `INFO persistence`.
 */
export interface NodePersistence {
  /** `host:port` of the server asked. */
  node: string;
  /** AOF on (`appendonly yes` / `aof_enabled:1`); undefined when it cannot tell. */
  aof: boolean | undefined;
  /** `appendfsync` (`everysec`, `always`, `no`) when CONFIG answered and AOF is on. */
  fsync?: string;
  /** RDB snapshots (`save` points set, or snapshots taken); undefined when it cannot tell. */
  rdb: boolean | undefined;
  /** The `save` points as CONFIG gives them (`3600 1 300 100`), when it answered. */
  save?: string;
  /** Why it cannot tell, when it cannot (ACL refusal, no answer). */
  unknown?: string;
}

/** What the servers keep: `persists` (every server keeps something), `none` (some keep nothing), `unknown`. */
export type PersistenceVerdict = 'persists' | 'none' | 'unknown';

export interface RedisPersistence {
  verdict: PersistenceVerdict;
  nodes: NodePersistence[];
}

/** The servers to ask: each master of a cluster, or the one server. */
function servers(redis: RedisClient): Redis[] {
  return redis.isCluster ? (redis as Cluster).nodes('master') : [redis as Redis];
}

const nodeName = (server: Redis) => `${server.options.host ?? '?'}:${server.options.port ?? '?'}`;

/** `CONFIG GET name` → its value; throws the server's refusal (NOPERM, unknown command). */
async function configValue(server: Redis, name: string): Promise<string> {
  const reply = (await server.call('CONFIG', 'GET', name)) as unknown;
  if (Array.isArray(reply) && typeof reply[1] === 'string') return reply[1];
  if (reply !== null && typeof reply === 'object' && name in reply) {
    return String((reply as Record<string, unknown>)[name]);
  }
  return '';
}

/** `field:value` lines of an `INFO` section. */
function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/** A refusal's first word (`NOPERM`, `ERR`), never more of the server's message than that. */
const refusal = (err: unknown) =>
  err instanceof Error ? (err.message.split(/\s/)[0] ?? 'error') : 'error';

/** What one server keeps on disk. */
export async function nodePersistence(server: Redis): Promise<NodePersistence> {
  const node = nodeName(server);
  let configRefused: string;
  try {
    const [appendonly, fsync, save] = await Promise.all(
      ['appendonly', 'appendfsync', 'save'].map((name) => configValue(server, name)),
    );
    const aof = appendonly === 'yes';
    const points = (save ?? '').trim();
    return {
      node,
      aof,
      ...(aof && fsync !== undefined ? { fsync } : {}),
      rdb: points !== '',
      save: points,
    };
  } catch (err) {
    configRefused = refusal(err);
  }
  try {
    const fields = infoFields(await server.info('persistence'));
    const aof = fields.get('aof_enabled');
    const saves = Number(fields.get('rdb_saves') ?? '0');
    // INFO names no save points: RDB is known only once a snapshot was taken.
    return {
      node,
      aof: aof === undefined ? undefined : aof === '1',
      rdb: saves > 0 ? true : undefined,
      ...(saves > 0
        ? {}
        : { unknown: `CONFIG GET refused (${configRefused}); save points unknown` }),
    };
  } catch (err) {
    return {
      node,
      aof: undefined,
      rdb: undefined,
      unknown: `CONFIG GET (${configRefused}) and INFO persistence (${refusal(err)}) refused`,
    };
  }
}

/** The verdict of the servers' answers. */
export function persistenceVerdict(nodes: readonly NodePersistence[]): PersistenceVerdict {
  if (nodes.some((n) => n.aof === false && n.rdb === false)) return 'none';
  if (nodes.length > 0 && nodes.every((n) => n.aof === true || n.rdb === true)) return 'persists';
  return 'unknown';
}

/** Asks every server (every master of a cluster) what it keeps on disk. */
export async function redisPersistence(redis: RedisClient): Promise<RedisPersistence> {
  const nodes = await Promise.all(servers(redis).map((server) => nodePersistence(server)));
  return { verdict: persistenceVerdict(nodes), nodes };
}

/** What one server keeps, in words: `AOF (everysec) and RDB (save 3600 1)`, `nothing`, … */
export function describeNode(n: NodePersistence): string {
  const parts: string[] = [];
  if (n.aof === true) parts.push(n.fsync === undefined ? 'AOF' : `AOF (${n.fsync})`);
  if (n.rdb === true) parts.push(n.save === undefined ? 'RDB' : `RDB (save ${n.save})`);
  if (parts.length > 0) return parts.join(' and ');
  if (n.aof === false && n.rdb === false) return 'nothing on disk (no AOF, no RDB save points)';
  return `cannot tell: ${n.unknown ?? 'no answer'}${n.aof === false ? ' (AOF off)' : ''}`;
}

/** One line for `config check` and the start-up log. */
export function describePersistence(report: RedisPersistence): string {
  const each = report.nodes.map((n) =>
    report.nodes.length > 1 ? `${n.node}: ${describeNode(n)}` : describeNode(n),
  );
  const verdict = {
    persists: 'Redis keeps its data on disk',
    none: 'Redis keeps nothing on disk: a restart loses the crosswalk, records and presets (docs/backup-and-recovery.md)',
    unknown: 'cannot tell whether Redis keeps its data on disk',
  }[report.verdict];
  return `${verdict}: ${each.join('; ')}`;
}

/** The logger's part this needs (pino's). */
export interface PersistenceLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/**
 * Asks once and logs the answer: a warning when a server keeps nothing on disk, else an info
 * line (persists, or cannot tell). Never throws: a Redis that does not answer is logged as
 * "cannot tell". Names servers and settings only.
 */
export async function logRedisPersistence(redis: RedisClient, log: PersistenceLog): Promise<void> {
  let report: RedisPersistence;
  try {
    report = await redisPersistence(redis);
  } catch (err) {
    log.info({ reason: refusal(err) }, 'cannot tell whether Redis keeps its data on disk');
    return;
  }
  const fields = { redis_persistence: report.verdict, nodes: report.nodes };
  if (report.verdict === 'none') log.warn(fields, describePersistence(report));
  else log.info(fields, describePersistence(report));
}
