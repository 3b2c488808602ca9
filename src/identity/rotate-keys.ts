import { Queue } from 'bullmq';
import { LuaScript } from '../queues/lua-script.ts';
import { allPrefixes, basePrefix, type KeySpace } from '../queues/partitions.ts';
import { scanEach, type RedisClient } from '../queues/redis-client.ts';
import { openOutboundEvent } from '../delivery/open-outbound-event.ts';
import { sealOutboundEvent } from '../delivery/outbound-event.ts';
import {
  OutboundKeyring,
  UnnamedOutboundKeys,
  type OutboundKeys,
} from '../delivery/outbound-keyring.ts';
import { ResultEventSchema } from '../interface/result-event.ts';
import {
  resealStoredEvent,
  StoredEventSchema,
  type StoredEvent,
} from '../delivery/stored-event.ts';
import type { CrosswalkKeys } from './crosswalk-keys.ts';
import { PREVENT_PATIENT_ID, preventContext } from './crosswalk.ts';

/** Sets a hash field only when it still holds the value read (a rotation never overwrites news). */
const HSET_IF = LuaScript.load(new URL('./lua/hset-if.lua', import.meta.url));

/** Moves one crosswalk entry to the new keys in one step (lookup entry, sealed copies, Prevent id). */
const MOVE_ENTRY = LuaScript.load(new URL('./lua/move-entry.lua', import.meta.url));

/**
 * The steps of {@link MOVE_ENTRY} when its keys are in different partitions (a cluster script
 * cannot span slots), each idempotent and in an order that a run again completes: the new lookup
 * entry (unless it names another patient), then the sealed copy (only if unchanged), then the old
 * lookup entry goes (only if it still names the patient: see the `already` branch).
 */
const SET_FORWARD = LuaScript.load(new URL('./lua/set-forward.lua', import.meta.url));
const SET_IF = LuaScript.load(new URL('./lua/set-if.lua', import.meta.url));

/** The lookup entry of a local id under `keys`, in its partition (see `Crosswalk`). */
function forwardKey(space: KeySpace, keys: CrosswalkKeys, localId: string): string {
  return forwardKeys(space, keys, localId)[0] as string;
}

/** The lookup entries of a local id under each key of `keys` (a keyring of older keys). */
function forwardKeys(space: KeySpace, keys: CrosswalkKeys, localId: string): string[] {
  return keys.lookups(localId).map((lookup) => {
    const prefix = typeof space === 'string' ? space : space.prefixAt(space.indexOfLookup(lookup));
    return `${prefix}:xw:${lookup}`;
  });
}

/** The hash-tagged part of a key (what puts it in its slot): its prefix up to the first `:`. */
const prefixOfKey = (key: string) => key.slice(0, key.indexOf(':'));

/** The keys one data kind rests sealed with: `from` the old ones, `to` the new. */
export interface KeyPair<K> {
  from: K;
  to: K;
}

export interface RotateKeysOptions {
  redis: RedisClient;
  /** A prefix, or the partitions: every partition is walked. */
  prefix: KeySpace;
  /** Re-seal what `CROSSWALK_KEY` protects (crosswalk, records, FHIR ids, waiting events, dead letters). */
  crosswalk?: KeyPair<CrosswalkKeys>;
  /**
   * Re-seal the outbound queue's events: offline, the `OUTBOUND_KEY` texts (`from` is tried
   * whatever key id an event names, `to` seals as key `0`); live, the older keys of `OUTBOUND_KEYS`
   * and its sealing key (`OutboundKeyring.rotation()`).
   */
  outbound?: KeyPair<string | OutboundKeys> & { queueName: string };
  /** Count what would change and write nothing. @defaultValue false */
  dryRun?: boolean;
}

/** What one kind of data came to. */
export interface RotationCount {
  /** Opened with the old key and sealed with the new one (or would be, in a dry run). */
  resealed: number;
  /** Already under the new key (an earlier run got there). */
  already: number;
  /** Opened with neither key: left as it is (a wrong old key, or altered data). */
  unreadable: number;
  /**
   * Crosswalk entries whose lookup entry under the new key names another patient (two processes
   * created the same new patient under different keys during a live rotation): left as they are.
   * Absent when there are none.
   */
  conflicts?: number;
}

export type RotationKind =
  'crosswalk' | 'records' | 'fhir_ids' | 'pending_events' | 'dead_letters' | 'outbound_events';

export type RotationReport = Record<RotationKind, RotationCount>;

const empty = (): RotationCount => ({ resealed: 0, already: 0, unreadable: 0 });

/** One more crosswalk entry left because another patient holds its new lookup entry. */
const conflict = (count: RotationCount) => {
  count.conflicts = (count.conflicts ?? 0) + 1;
};

/** `text` matched literally by a SCAN pattern. */
const glob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

async function* scan(redis: RedisClient, pattern: string, type: string): AsyncGenerator<string> {
  for await (const keys of scanEach(redis, pattern, { type, count: 500 })) yield* keys;
}

/** Whether `open` succeeds (a sealed value under these keys and this context). */
function opens(keys: CrosswalkKeys, sealed: string, context: string): Buffer | undefined {
  try {
    return keys.open(sealed, context);
  } catch {
    return undefined;
  }
}

/**
 * Re-seals everything sealed with an old `CROSSWALK_KEY` and/or `OUTBOUND_KEY` under the new one,
 * item by item: each item is checked first (already new: skipped), and written in one step that
 * only applies if it did not change meanwhile. So a run can be interrupted and simply run again,
 * and a second run changes nothing. Offline (`keys rotate`), run it with the pipeline stopped; live
 * (`keys rotate --live`), `from` is every older key of the keyring and `to` its sealing key, and
 * it runs while updates flow: every write is conditional on what was read (see
 * docs/security-and-privacy.md, key rotation).
 */
export async function rotateKeys(options: RotateKeysOptions): Promise<RotationReport> {
  const report: RotationReport = {
    crosswalk: empty(),
    records: empty(),
    fhir_ids: empty(),
    pending_events: empty(),
    dead_letters: empty(),
    outbound_events: empty(),
  };
  if (options.crosswalk !== undefined) {
    for (const prefix of allPrefixes(options.prefix)) {
      await rotateCrosswalk(options, prefix, options.crosswalk, report);
    }
  }
  if (options.outbound !== undefined) await rotateOutbound(options, options.outbound, report);
  return report;
}

/** One partition's part of the rotation (`prefix`); lookup entries may be in other partitions. */
async function rotateCrosswalk(
  { redis, prefix: space, dryRun = false }: RotateKeysOptions,
  prefix: string,
  { from, to }: KeyPair<CrosswalkKeys>,
  report: RotationReport,
): Promise<void> {
  const p = glob(prefix);

  // The crosswalk: reverse entries `xwr:<psid>` hold the sealed local id; the forward entry is
  // named by its HMAC and must be renamed.
  for await (const reverse of scan(redis, `${p}:xwr:*`, 'string')) {
    const psid = reverse.slice(`${prefix}:xwr:`.length);
    const sealed = await redis.get(reverse);
    if (sealed === null) continue;
    const context = `xw:${psid}`;
    const count = report.crosswalk;
    const current = opens(to, sealed, context);
    if (current !== undefined) {
      // Already moved (or made under the new key); an old lookup entry left by a run stopped
      // between the steps of a move across partitions is removed, once the new one names the
      // patient.
      const localId = current.toString('utf8');
      if (!dryRun && (await redis.hget(forwardKey(space, to, localId), 'psid')) === psid) {
        for (const old of forwardKeys(space, from, localId)) {
          if ((await redis.hget(old, 'psid')) === psid) await redis.del(old);
        }
      }
      count.already += 1;
      continue;
    }
    const local = opens(from, sealed, context);
    if (local === undefined) {
      count.unreadable += 1;
      continue;
    }
    const localId = local.toString('utf8');
    const next = forwardKey(space, to, localId);
    // The old lookup entry that names the patient (the first old key's when none does).
    const olds = forwardKeys(space, from, localId);
    let old = olds[0] as string;
    for (const candidate of olds) {
      if ((await redis.hget(candidate, 'psid')) === psid) {
        old = candidate;
        break;
      }
    }
    const resealed = to.seal(localId, context);
    // The Prevent id moves with the entry (re-sealed); one the old keys do not open is left out.
    const prevent = await redis.hget(old, PREVENT_PATIENT_ID);
    const preventId = prevent === null ? undefined : opens(from, prevent, preventContext(psid));
    const movedPrevent = preventId === undefined ? '' : to.seal(preventId, preventContext(psid));
    const named = await redis.hget(next, 'psid');
    if (named !== null && named !== psid) {
      // Another patient holds the new lookup entry: never overwritten (see RotationCount).
      conflict(count);
      continue;
    }
    if (!dryRun && new Set([reverse, next, old].map(prefixOfKey)).size === 1) {
      const moved = await MOVE_ENTRY.run(
        redis,
        [reverse, next, old],
        [sealed, resealed, psid, movedPrevent, prevent ?? ''],
      );
      // 0: changed since read (a purge, a new Prevent id): the next run takes it as it is then.
      if (moved === 2) conflict(count);
      if (moved !== 1) continue;
    } else if (!dryRun) {
      // The new lookup entry falls in another partition: three steps (see SET_FORWARD).
      if ((await SET_FORWARD.run(redis, [next], [psid, resealed, movedPrevent])) !== 1) {
        conflict(count);
        continue;
      }
      if ((await SET_IF.run(redis, [reverse], [sealed, resealed])) !== 1) continue;
      if (old !== next && (await redis.hget(old, 'psid')) === psid) await redis.del(old);
    }
    count.resealed += 1;
  }

  // Records (`record`, `clinical`) and opaque FHIR ids: hash fields sealed per patient.
  for await (const key of scan(redis, `${p}:rec:*`, 'hash')) {
    const psid = key.slice(`${prefix}:rec:`.length);
    for (const [field, purpose] of [
      ['record', 'rec'],
      ['clinical', 'clin'],
    ] as const) {
      await resealField(
        redis,
        key,
        field,
        `${purpose}:${psid}`,
        { from, to },
        report.records,
        dryRun,
      );
    }
  }
  for await (const key of scan(redis, `${p}:fhir:*`, 'hash')) {
    const psid = key.slice(`${prefix}:fhir:`.length);
    // The field names (opaque ids) stay: they were sent to the service and map back from it.
    for (const field of await redis.hkeys(key)) {
      await resealField(redis, key, field, `fhir:${psid}`, { from, to }, report.fhir_ids, dryRun);
    }
  }

  // Result events waiting for the webhook, and dead letters: patient_id sealed per event.
  /** The stored event under the new key, or why not. */
  const resealEvent = (stored: unknown): StoredEvent | 'already' | 'unreadable' => {
    // An event of a version before sealing (plain patient_id) is sealed now.
    if (ResultEventSchema.safeParse(stored).success) return resealStoredEvent(stored, to, to);
    if (!StoredEventSchema.safeParse(stored).success) return 'unreadable';
    try {
      resealStoredEvent(stored, to, to);
      return 'already';
    } catch {
      // not under the new key
    }
    try {
      return resealStoredEvent(stored, from, to);
    } catch {
      return 'unreadable';
    }
  };
  const asText = (
    outcome: StoredEvent | 'already' | 'unreadable',
    text: (event: StoredEvent) => string,
  ): string => (typeof outcome === 'string' ? outcome : text(outcome));
  for await (const key of scan(redis, `${p}:webhook:event:*`, 'hash')) {
    const raw = await redis.hget(key, 'event');
    if (raw === null) continue;
    const outcome = asText(resealEvent(JSON.parse(raw)), (e) => JSON.stringify(e));
    await apply(redis, key, 'event', raw, outcome, report.pending_events, dryRun);
  }
  const letters = `${prefix}:dead-letters:records`;
  let cursor = '0';
  do {
    const [next, entries] = await redis.hscan(letters, cursor, 'COUNT', 500);
    cursor = next;
    for (let i = 0; i + 1 < entries.length; i += 2) {
      const [id, raw] = [entries[i] ?? '', entries[i + 1] ?? ''];
      const letter = JSON.parse(raw) as Record<string, unknown>;
      const outcome = asText(resealEvent(letter.event), (event) =>
        JSON.stringify({ ...letter, event }),
      );
      await apply(redis, letters, id, raw, outcome, report.dead_letters, dryRun);
    }
  } while (cursor !== '0');
}

async function resealField(
  redis: RedisClient,
  key: string,
  field: string,
  context: string,
  { from, to }: KeyPair<CrosswalkKeys>,
  count: RotationCount,
  dryRun: boolean,
): Promise<void> {
  const sealed = await redis.hget(key, field);
  if (sealed === null) return;
  if (opens(to, sealed, context) !== undefined) {
    count.already += 1;
    return;
  }
  const plain = opens(from, sealed, context);
  const outcome = plain === undefined ? 'unreadable' : to.seal(plain, context);
  await apply(redis, key, field, sealed, outcome, count, dryRun);
}

/** Writes `outcome` over `previous` (only if unchanged) and counts it. */
async function apply(
  redis: RedisClient,
  key: string,
  field: string,
  previous: string,
  outcome: string,
  count: RotationCount,
  dryRun: boolean,
): Promise<void> {
  if (outcome === 'already') count.already += 1;
  else if (outcome === 'unreadable') count.unreadable += 1;
  else {
    if (!dryRun) await HSET_IF.run(redis, [key], [field, previous, outcome]);
    count.resealed += 1;
  }
}

/**
 * The outbound queue's jobs (every state: a consumed event kept for `retention` is under the key
 * too), each re-sealed in one step that applies only if its data is still what was read: a job a
 * consumer removed meanwhile is not re-created, and a re-seal by another run is not overwritten.
 * Paging while consumers move jobs between states may miss a job: `keys status` shows it, and a
 * run again takes it.
 */
async function rotateOutbound(
  { redis, prefix, dryRun = false }: RotateKeysOptions,
  { from, to, queueName }: KeyPair<string | OutboundKeys> & { queueName: string },
  report: RotationReport,
): Promise<void> {
  // Derived once for every event; a malformed old key fails here, before anything is read.
  const toKeys = typeof to === 'string' ? OutboundKeyring.legacy(to) : to;
  const fromKeys = typeof from === 'string' ? new UnnamedOutboundKeys([from]) : from;
  // One outbound queue, under the configured prefix (partition 0's).
  const queue = new Queue(queueName, { connection: redis, prefix: basePrefix(prefix) });
  const count = report.outbound_events;
  try {
    const states = ['wait', 'delayed', 'prioritized', 'active', 'completed', 'failed'] as const;
    const page = 500;
    for (let start = 0; ; start += page) {
      const jobs = await queue.getJobs([...states], start, start + page - 1, true);
      for (const job of jobs) {
        if (job.id === undefined) continue;
        const key = queue.toKey(job.id);
        // The data as stored (not as parsed), so that the write can check it did not change.
        const raw = await redis.hget(key, 'data');
        if (raw === null) continue; // consumed and removed meanwhile
        const data: unknown = JSON.parse(raw);
        try {
          openOutboundEvent(data, toKeys);
          count.already += 1;
          continue;
        } catch {
          // not under the new key
        }
        let opened;
        try {
          opened = openOutboundEvent(data, fromKeys);
        } catch {
          count.unreadable += 1;
          continue;
        }
        const resealed = JSON.stringify(sealOutboundEvent(opened, toKeys));
        if (!dryRun && (await HSET_IF.run(redis, [key], ['data', raw, resealed])) !== 1) continue;
        count.resealed += 1;
      }
      if (jobs.length < page) break;
    }
  } finally {
    await queue.close();
  }
}
