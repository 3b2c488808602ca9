import { Queue } from 'bullmq';
import { WEBHOOK_DELIVERIES } from '../delivery/webhook-deliveries-queue.ts';
import { pollSetKey } from '../queries/poll-set.ts';
import { workersPresent } from '../queries/worker-presence.ts';
import { queryOutboxKey } from '../queries/query-outbox.ts';
import type { Partitions } from '../queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../queues/queue-names.ts';
import { globLiteral, scanEach, type RedisClient } from '../queues/redis-client.ts';
import { StartupError } from '../config/startup-error.ts';

/** Job states of a queue that is not drained. */
const BUSY_STATES = ['waiting', 'delayed', 'active', 'prioritized', 'paused', 'waiting-children'];

/** Keys named after a patient's service id: `<kind>:<psid>`. */
const BY_SERVICE_ID = new Set(['rec', 'presets', 'xwr', 'xwm', 'fhir', 'optout']);

/** The dead-letter keys: one hash and two sorted sets, split letter by letter. */
const LETTERS = ['dead-letters:records', 'dead-letters:by-time', 'dead-letters:expiry'] as const;

export interface RepartitionOptions {
  redis: RedisClient;
  /** The partitions the data was written with. */
  from: Partitions;
  /** The partitions wanted (`redis.partitions` of the configuration). */
  to: Partitions;
  /** Count what would move and change nothing. @defaultValue false */
  dryRun?: boolean;
}

export interface RepartitionReport {
  /** Keys moved to another partition, by kind (`rec`, `xw`, `qs`, …). */
  moved: Record<string, number>;
  /** Keys already in their partition. */
  kept: number;
  /** Dead letters moved one by one. */
  dead_letters_moved: number;
  /** Keys left under a prefix the new layout does not use (drained queues' bookkeeping), deleted. */
  deleted: number;
}

/**
 * Why the data cannot be moved now: workers connected, or work in flight in the old layout (jobs
 * that are not finished, due queries, webhook lines, queries waiting for a birth date). Empty
 * when it can. The move needs a drained pipeline: a job names no partition, but a webhook line,
 * its events and its queue must stay together.
 */
export async function repartitionBlockers(
  redis: RedisClient,
  from: Partitions,
  to: Partitions,
): Promise<string[]> {
  const blockers: string[] = [];
  const prefixes = [...new Set([...from.prefixes, ...to.prefixes])];
  for (const prefix of prefixes) {
    for (const name of [CONCORDANCE_QUERIES, WEBHOOK_DELIVERIES]) {
      // Read only: no `meta` written for a queue that does not exist.
      const queue = new Queue(name, { connection: redis, prefix, skipMetasUpdate: true });
      queue.on('error', () => undefined);
      try {
        const workers = await queue.getWorkersCount();
        if (workers > 0) blockers.push(`${workers} worker(s) of ${prefix}:${name} are connected`);
        const counts = await queue.getJobCounts(...(BUSY_STATES as never[]));
        const busy = Object.values(counts).reduce((a, b) => a + b, 0);
        if (busy > 0) blockers.push(`${prefix}:${name} still has ${busy} unfinished job(s)`);
      } finally {
        await queue.close();
      }
    }
  }
  for (const prefix of from.prefixes) {
    const due = await redis.zcard(queryOutboxKey(prefix));
    if (due > 0) blockers.push(`${prefix} has ${due} due quer(ies) not yet queued`);
    const present = await workersPresent(redis, prefix);
    if (present > 0) {
      blockers.push(`${present} worker(s) of ${prefix}:${CONCORDANCE_QUERIES} are connected`);
    }
    const polled = await redis.zcard(pollSetKey(prefix));
    if (polled > 0) blockers.push(`${prefix} has ${polled} submitted quer(ies) still polled`);
    const lines = await redis.scard(`${prefix}:webhook:keys`);
    if (lines > 0) blockers.push(`${prefix} has ${lines} webhook line(s) waiting`);
    const waiting = await redis.zcard(`${prefix}:waitdemo`);
    if (waiting > 0) blockers.push(`${prefix} has ${waiting} quer(ies) waiting for a birth date`);
  }
  return blockers;
}

/** The partition a key of the old layout belongs to in the new one; undefined: it stays. */
async function targetOf(
  redis: RedisClient,
  to: Partitions,
  key: string,
  rest: string,
): Promise<number | undefined> {
  const colon = rest.indexOf(':');
  const kind = colon < 0 ? rest : rest.slice(0, colon);
  const tail = rest.slice(colon + 1);
  if (BY_SERVICE_ID.has(kind)) return to.indexOf(tail);
  if (kind === 'xw') return to.indexOfLookup(tail);
  if (kind === 'qs') return to.indexOf(tail.slice(0, tail.indexOf(':')));
  if (rest.startsWith('delivery:last:')) {
    const name = rest.slice('delivery:last:'.length);
    return to.indexOf(name.slice(0, name.indexOf('/')));
  }
  if (kind === 'idem') {
    // The remembered answer names the patient.
    const answer = await redis.get(key);
    const psid = answer === null ? undefined : serviceIdIn(answer, 'patient_service_id');
    return psid === undefined ? undefined : to.indexOf(psid);
  }
  if (rest.startsWith('webhook:event:')) {
    const line = await redis.hget(key, 'key');
    return line === null ? undefined : to.indexOf(line.slice(0, line.indexOf('/')));
  }
  return undefined;
}

/** `field` of a JSON object, when it is a string. */
function serviceIdIn(json: string, field: string): string | undefined {
  try {
    const value = (JSON.parse(json) as Record<string, unknown>)[field];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Copies a key to another name (another slot: DUMP and RESTORE, with its TTL), then deletes it. */
async function moveKey(redis: RedisClient, key: string, target: string): Promise<void> {
  const [dump, ttl] = await Promise.all([redis.dumpBuffer(key), redis.pttl(key)]);
  if (dump === null) return; // gone meanwhile (expired)
  await redis.restore(target, ttl > 0 ? ttl : 0, dump, 'REPLACE');
  await redis.del(key);
}

/** Moves each dead letter of `prefix` to its patient's partition (three keys per partition). */
async function moveLetters(
  redis: RedisClient,
  prefix: string,
  to: Partitions,
  dryRun: boolean,
): Promise<number> {
  const [records, byTime, expiry] = LETTERS.map((name) => `${prefix}:${name}`) as [
    string,
    string,
    string,
  ];
  let moved = 0;
  let cursor = '0';
  do {
    const [next, entries] = await redis.hscan(records, cursor, 'COUNT', 500);
    cursor = next;
    for (let i = 0; i + 1 < entries.length; i += 2) {
      const [id, raw] = [entries[i] ?? '', entries[i + 1] ?? ''];
      // The service id rests in clear in a letter (it identifies no one outside this pipeline).
      const event = (() => {
        try {
          return (JSON.parse(raw) as { event?: unknown }).event;
        } catch {
          return undefined;
        }
      })();
      const psid =
        typeof event === 'object' && event !== null
          ? (event as { patient_service_id?: unknown }).patient_service_id
          : undefined;
      if (typeof psid !== 'string') continue;
      const target = to.prefixOf(psid);
      if (target === prefix) continue;
      moved += 1;
      if (dryRun) continue;
      const [at, until] = await Promise.all([redis.zscore(byTime, id), redis.zscore(expiry, id)]);
      // The letter first appears in its new partition, then leaves the old one: a run stopped
      // in between is completed by running it again.
      const write = redis.multi().hset(`${target}:${LETTERS[0]}`, id, raw);
      if (at !== null) write.zadd(`${target}:${LETTERS[1]}`, at, id);
      if (until !== null) write.zadd(`${target}:${LETTERS[2]}`, until, id);
      await write.exec();
      await redis.multi().hdel(records, id).zrem(byTime, id).zrem(expiry, id).exec();
    }
  } while (cursor !== '0');
  return moved;
}

/**
 * Moves the data of a drained pipeline from the partitions it was written with to those of the
 * configuration (see docs/deployment.md, "Scale out"): every key named after a patient (record, presets,
 * crosswalk entries, opt-out, FHIR ids, query state, last results, remembered answers, webhook
 * delivery markers) and every dead letter goes to its patient's partition in the new layout;
 * what is not a patient's (the outbound queue, the audit log, FHIR and terminology state) stays
 * under the configured prefix; what is left under a prefix the new layout does not use (the
 * drained queues' bookkeeping) is deleted. Each key is copied before it is deleted: a run that
 * stopped half-way is completed by running it again, and a second run moves nothing.
 * Throws a {@link StartupError} listing the blockers when the pipeline is not drained.
 */
export async function repartition(options: RepartitionOptions): Promise<RepartitionReport> {
  const { redis, from, to, dryRun = false } = options;
  if (from.base !== to.base) throw new StartupError('the prefix must stay the same');
  const blockers = await repartitionBlockers(redis, from, to);
  if (blockers.length > 0) {
    throw new StartupError(
      `drain the pipeline first (stop ingest, let the workers finish, stop them):\n  ${blockers.join('\n  ')}`,
    );
  }
  const report: RepartitionReport = { moved: {}, kept: 0, dead_letters_moved: 0, deleted: 0 };
  // What stays under a prefix the new layout does not use: drained bookkeeping, deleted at the end.
  const orphans: string[] = [];
  for (const prefix of from.prefixes) {
    const orphan = !to.prefixes.includes(prefix);
    for await (const keys of scanEach(redis, `${globLiteral(prefix)}:*`, { count: 500 })) {
      for (const key of keys) {
        const rest = key.slice(prefix.length + 1);
        const index = await targetOf(redis, to, key, rest);
        if (index === undefined) {
          if (orphan) orphans.push(key);
          continue;
        }
        const target = to.prefixAt(index);
        if (target === prefix) {
          report.kept += 1;
          continue;
        }
        const kind = rest.startsWith('delivery:last:')
          ? 'delivery:last'
          : rest.startsWith('webhook:event:')
            ? 'webhook:event'
            : rest.slice(0, rest.indexOf(':'));
        report.moved[kind] = (report.moved[kind] ?? 0) + 1;
        if (!dryRun) await moveKey(redis, key, `${target}:${rest}`);
      }
    }
    report.dead_letters_moved += await moveLetters(redis, prefix, to, dryRun);
  }
  report.deleted = orphans.length;
  if (!dryRun) for (const key of orphans) await redis.del(key);
  return report;
}
