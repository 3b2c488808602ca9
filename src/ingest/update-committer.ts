import type { RedisClient } from '../queues/redis-client.ts';
import type { Registry } from 'prom-client';
import type { Config } from '../config/config-schema.ts';
import type { CrosswalkPlan } from '../identity/crosswalk.ts';
import type { PresetStore } from '../presets/preset-store.ts';
import { Partitions, patientPrefix, type KeySpace } from '../queues/partitions.ts';
import { optOutKey } from '../privacy/patient-consent.ts';
import { queryJobId, queryJobIdPrefix } from '../queries/query-job.ts';
import { queryOutboxKey, queryStateKey, SCHEDULE_QUERY_LUA } from '../queries/query-outbox.ts';
import { MAX_TRIGGER_IDS } from '../queries/query-state.ts';
import { LuaScript } from '../queues/lua-script.ts';
import type { ScheduledQuery } from '../queries/query-scheduler.ts';
import type { RecordStore } from '../records/record-store.ts';
import { IdempotencyStore } from './idempotency-store.ts';
import { IngestMetrics } from './ingest-metrics.ts';

/**
 * Everything one message changes, in one script, so that Redis holds all of it or none of it: the
 * crosswalk entry of a new patient, the record (a JSON record replaced, or a clinical record written
 * only if its version is still the one it was computed from), a merge's prior patient, the
 * problem-list presets, one open query per preset category (and its place in the due set), and the
 * sender's event id. An acknowledged update therefore always has its queries written down.
 *
 * Answers: `{'duplicate', answer}`, `{'conflict'}` (the caller re-reads and retries),
 * `{'missing'}` (no record to run on), `{'unchanged', version}` (the same record, its queries
 * already opened), or `{'ok', version, opted_out, {category, seq, coalesced…}}`.
 */
const COMMIT_BODY = `
local mode = ARGV[1]
-- A service id taken from the process's crosswalk cache or read before: the local id's lookup
-- entry must still name it, and no merge may have retired it; else the caller looks it up again.
if ARGV[24] == '1' then
  if redis.call('HGET', KEYS[6], 'psid') ~= ARGV[7] then return {'stale'} end
  if redis.call('EXISTS', KEYS[11]) == 1 then return {'retired'} end
end
-- A record identical to the stored one (same content HMAC) changes nothing: it is a 'keep' that
-- opens queries only if they are stale (see below).
local only_if_stale = ARGV[21] == '1'
if mode == 'put' and ARGV[20] ~= '' and redis.call('HGET', KEYS[1], 'content') == ARGV[20] then
  mode = 'keep'
  only_if_stale = true
end
local idem_ttl = tonumber(ARGV[14])
if idem_ttl > 0 then
  local stored = redis.call('GET', KEYS[3])
  if stored then return {'duplicate', stored} end
end
if mode == 'keep' then
  if redis.call('HEXISTS', KEYS[1], 'record') == 0 and redis.call('HEXISTS', KEYS[1], 'clinical') == 0 then
    return {'missing'}
  end
end
if ARGV[15] == '1' then
  local existing = redis.call('HGET', KEYS[6], 'psid')
  if existing and existing ~= ARGV[7] then return {'conflict'} end
  if not existing then
    redis.call('HSET', KEYS[6], 'psid', ARGV[7], 'local', ARGV[16])
    redis.call('SET', KEYS[7], ARGV[16])
  end
end
if mode == 'clinical' then
  if tonumber(redis.call('HGET', KEYS[1], 'version') or '0') ~= tonumber(ARGV[2]) then return {'conflict'} end
end
if ARGV[17] == '1' then
  if tonumber(redis.call('HGET', KEYS[9], 'version') or '0') ~= tonumber(ARGV[18]) then return {'conflict'} end
end
local version
if mode == 'keep' then
  version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
else
  version = redis.call('HINCRBY', KEYS[1], 'version', 1)
  if mode == 'put' then
    redis.call('HSET', KEYS[1], 'record', ARGV[3], 'updated_at', ARGV[4], 'content', ARGV[20])
  else
    redis.call('HSET', KEYS[1], 'clinical', ARGV[3], 'updated_at', ARGV[4])
  end
end
local retention = tonumber(ARGV[13])
if retention > 0 then redis.call('EXPIRE', KEYS[1], retention) end
if ARGV[17] == '1' then
  local prior = redis.call('HGETALL', KEYS[8])
  for i = 1, #prior, 2 do redis.call('HSETNX', KEYS[2], prior[i], prior[i + 1]) end
  redis.call('DEL', KEYS[8])
  redis.call('HDEL', KEYS[9], 'record', 'clinical')
  -- Retired: its local id now leads to the survivor, and a writer that read it before fails.
  if ARGV[22] == '1' then
    redis.call('SET', KEYS[10], ARGV[7])
    redis.call('HINCRBY', KEYS[9], 'version', 1)
  end
end
-- A merge whose prior patient is in another partition: its presets, read before, come as ARGV[23]
-- (field, value, …) and the prior patient is retired by a second script (see RETIRE_PRIOR).
if ARGV[23] ~= '' then
  local moved = cjson.decode(ARGV[23])
  for i = 1, #moved, 2 do redis.call('HSETNX', KEYS[2], moved[i], moved[i + 1]) end
end
if ARGV[10] == '1' then
  local wanted = {}
  local value = cjson.encode({source = 'problem_list', created_at = ARGV[4]})
  for _, category in ipairs(cjson.decode(ARGV[11])) do
    wanted[category] = true
    redis.call('HSETNX', KEYS[2], category, value)
  end
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    if not wanted[all[i]] then
      local ok, preset = pcall(cjson.decode, all[i + 1])
      if ok and type(preset) == 'table' and preset.source == 'problem_list' then
        redis.call('HDEL', KEYS[2], all[i])
      end
    end
  end
end
local categories = {}
local seen = {}
for _, category in ipairs(redis.call('HKEYS', KEYS[2])) do
  seen[category] = true
  table.insert(categories, category)
end
table.sort(categories)
for _, category in ipairs(cjson.decode(ARGV[12])) do
  if not seen[category] then
    seen[category] = true
    table.insert(categories, category)
  end
end
local opted_out = redis.call('EXISTS', KEYS[5])
-- The categories the stored version's queries were opened for: the same record and the same
-- categories again open nothing (no work for nothing); new presets, or a version whose queries
-- never opened (the patient was opted out), still do.
local fingerprint = table.concat(categories, ',')
if only_if_stale and opted_out == 0
  and tonumber(redis.call('HGET', KEYS[1], 'q_version') or '-1') == version
  and redis.call('HGET', KEYS[1], 'q_categories') == fingerprint then
  if idem_ttl > 0 then
    local answer = '{"event_id":' .. cjson.encode(ARGV[6]) .. ',"patient_service_id":' ..
      cjson.encode(ARGV[7]) .. ',"queries":[]}'
    redis.call('SET', KEYS[3], answer, 'EX', idem_ttl)
  end
  return {'unchanged', version}
end
if opted_out == 0 then redis.call('HSET', KEYS[1], 'q_version', version, 'q_categories', fingerprint) end
local scheduled = {}
local answers = {}
if opted_out == 0 then
  for _, category in ipairs(categories) do
    local qs_key = ARGV[8] .. category
    local seq, coalesced = schedule_query(qs_key, KEYS[4], ARGV[7], category, ARGV[6], ARGV[4], ARGV[5], tonumber(ARGV[9]))
    if retention > 0 then redis.call('EXPIRE', qs_key, retention) end
    table.insert(scheduled, category)
    table.insert(scheduled, seq)
    table.insert(scheduled, coalesced)
    local flag = 'false'
    if coalesced == 1 then flag = 'true' end
    table.insert(answers, '{"ccsr_category":' .. cjson.encode(category) .. ',"job_id":' ..
      cjson.encode(ARGV[19] .. category .. '-' .. seq) .. ',"coalesced":' .. flag .. '}')
  end
end
if idem_ttl > 0 then
  local answer = '{"event_id":' .. cjson.encode(ARGV[6]) .. ',"patient_service_id":' ..
    cjson.encode(ARGV[7]) .. ',"queries":[' .. table.concat(answers, ',') .. ']}'
  redis.call('SET', KEYS[3], answer, 'EX', idem_ttl)
end
return {'ok', version, opted_out, scheduled}
`;

const COMMIT = new LuaScript(`${SCHEDULE_QUERY_LUA}${COMMIT_BODY}`);

/** How many KEYS and ARGV one commit of {@link COMMIT_BODY} takes. */
const COMMIT_KEYS = 11;
const COMMIT_ARGS = 24;

/**
 * Many commits in one script (one slot): the commit of {@link COMMIT} for each item in turn, its
 * KEYS and ARGV the item's slice of the call's (ARGV[1] is the item count), answering one reply
 * per item. Before anything is written every item is checked: an item whose lookup entry moved
 * (`stale`, `retired`), whose new patient was created meanwhile (`conflict`) or that has no record
 * to run on (`missing`) makes the whole call write nothing and answer `{'refused', i, reason}`
 * (the first such item, from 1), so that the caller can look it up again or refuse the batch.
 */
const COMMIT_MANY = new LuaScript(`${SCHEDULE_QUERY_LUA}
local function commit_one(KEYS, ARGV)
${COMMIT_BODY}
end
-- What the items before this one will have written by the time it runs: records, lookup entries.
local function precheck(KEYS, ARGV, will_exist, will_name)
  local named = false
  if ARGV[24] == '1' or ARGV[15] == '1' then
    named = will_name[KEYS[6]] or redis.call('HGET', KEYS[6], 'psid')
  end
  if ARGV[24] == '1' then
    if named ~= ARGV[7] then return 'stale' end
    if redis.call('EXISTS', KEYS[11]) == 1 then return 'retired' end
  end
  if ARGV[15] == '1' then
    if named and named ~= ARGV[7] then return 'conflict' end
    will_name[KEYS[6]] = ARGV[7]
  end
  if ARGV[1] == 'keep' and not will_exist[KEYS[1]]
    and redis.call('HEXISTS', KEYS[1], 'record') == 0 and redis.call('HEXISTS', KEYS[1], 'clinical') == 0 then
    if tonumber(ARGV[14]) == 0 or not redis.call('GET', KEYS[3]) then return 'missing' end
  end
  if ARGV[1] == 'put' then will_exist[KEYS[1]] = true end
  return nil
end
local count = tonumber(ARGV[1])
local items = {}
for i = 0, count - 1 do
  local k, a = {}, {}
  for j = 1, ${COMMIT_KEYS} do k[j] = KEYS[i * ${COMMIT_KEYS} + j] end
  for j = 1, ${COMMIT_ARGS} do a[j] = ARGV[1 + i * ${COMMIT_ARGS} + j] end
  items[i + 1] = {k, a}
end
local will_exist, will_name = {}, {}
for i, item in ipairs(items) do
  local reason = precheck(item[1], item[2], will_exist, will_name)
  if reason then return {'refused', i, reason} end
end
local replies = {}
for i, item in ipairs(items) do
  -- Checked above, in this same script: the lookup entries cannot have moved since.
  item[2][24] = '0'
  replies[i] = commit_one(item[1], item[2])
end
return {'done', replies}
`);

/**
 * The second step of a merge whose prior patient lives in another partition than the survivor (a
 * Redis Cluster script cannot span two slots): once the survivor has the prior's record and
 * presets (the first script), the prior patient loses its record and presets and is retired, but
 * only if neither changed since they were read (its version, and its presets exactly as copied):
 * else `0`, and the caller reads both again and repeats the merge (the survivor's part again is
 * harmless: the same items and presets). A crash between the two leaves the prior patient as it
 * was (its message was not acknowledged, and its resend completes the merge).
 *
 * KEYS: prior presets, prior record, retired key. ARGV: expected prior version, the presets read
 * (JSON `[field, value, …]`), the survivor's service id, '1' to retire.
 */
const RETIRE_PRIOR = `
if tonumber(redis.call('HGET', KEYS[2], 'version') or '0') ~= tonumber(ARGV[1]) then return 0 end
local now = redis.call('HGETALL', KEYS[1])
local was = cjson.decode(ARGV[2])
if #now ~= #was then return 0 end
local read = {}
for i = 1, #was, 2 do read[was[i]] = was[i + 1] end
for i = 1, #now, 2 do
  if read[now[i]] ~= now[i + 1] then return 0 end
end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[2], 'record', 'clinical')
if ARGV[4] == '1' then
  redis.call('SET', KEYS[3], ARGV[3])
  redis.call('HINCRBY', KEYS[2], 'version', 1)
end
return 1
`;

/** How the message changes the record. */
export type RecordWrite =
  /**
   * A JSON AssembledPatient replaces the record, unless `contentHmac` (a keyed hash of its
   * normalized content) equals the stored one's: then nothing is written.
   */
  | { kind: 'put'; sealed: string; contentHmac: string }
  /** The clinical record computed from version `expectedVersion`; refused if it moved since. */
  | { kind: 'clinical'; sealed: string; expectedVersion: number }
  /** No record in the message: the stored one must exist, and is what the queries run on. */
  | { kind: 'keep' };

export interface CommitInput {
  patientServiceId: string;
  /** Set when the patient has no crosswalk entry yet: it is created in the same script. */
  newPatient?: CrosswalkPlan;
  record: RecordWrite;
  /** Names the update in its queries' `triggered_by` (and as the sender's idempotency key). */
  eventId: string;
  now: Date;
  /** The problem-list categories of the new record; `undefined` leaves the presets as they are. */
  problemList?: readonly string[];
  /** Categories run for this update besides the patient's presets (rules, explicit). */
  extraCategories: readonly string[];
  /** Remember the sender's event id with the answer (JSON record updates). */
  remember?: boolean;
  /**
   * Open queries only if the stored version's queries are stale (never opened, or opened for other
   * categories): for a message that left the record as it was.
   */
  onlyIfStale?: boolean;
  /**
   * An HL7 merge: the prior patient's presets move here and its record goes. With `retiredKey`
   * (`Crosswalk.retiredKeyOf(prior)`), the prior service id is retired in the same script: the key
   * names the survivor, so that later updates of the prior local id reach the survivor (see
   * `Crosswalk.findCurrent`), and the prior record's version moves so that a writer that read it
   * before the merge retries.
   */
  merge?: { priorPatientServiceId: string; priorExpectedVersion: number; retiredKey?: string };
  /**
   * For a known patient whose service id came from the crosswalk cache or a lookup made before
   * (see `PatientLocator`): the script first checks that the local id's lookup entry (`lookupKey`,
   * in the patient's slot) still names `patientServiceId` and that it was not retired by a merge
   * (`retiredKey`, `Crosswalk.retiredKeyOf`); else it writes nothing and answers `stale` or
   * `retired`. Ignored with `newPatient` (the script checks the entry then).
   */
  verify?: { lookupKey: string; retiredKey: string };
}

export type CommitResult =
  /** The record is as it was and its queries were already opened for it: nothing to do. */
  | { status: 'unchanged'; version: number }
  | {
      status: 'ok';
      version: number;
      /** The patient opted out: the record is stored, no query is opened. */
      optedOut: boolean;
      queries: ScheduledQuery[];
    }
  | { status: 'duplicate'; answer: unknown }
  | { status: 'conflict' }
  | { status: 'missing' }
  /** `verify` failed: the lookup entry no longer names the service id (purged, re-created). */
  | { status: 'stale' }
  /** `verify` failed: a merge retired the service id (look the local id up through merges). */
  | { status: 'retired' };

/** Why {@link UpdateCommitter.commitMany} refused an item (its call wrote nothing). */
export type RefusedStatus = 'stale' | 'retired' | 'conflict' | 'missing';

/**
 * One item's answer from {@link UpdateCommitter.commitMany}: as {@link CommitResult}, or
 * `skipped` when another item of its script call (or an earlier call of its partition) was
 * refused, so that it was not written.
 */
export type ManyCommitResult = CommitResult | { status: 'skipped' };

/**
 * Items per {@link COMMIT_MANY} call: bounds how long one call holds Redis (each item is about a
 * dozen commands), while a batch still takes few round trips.
 */
export const MAX_ITEMS_PER_SCRIPT = 100;

/**
 * What the commit script reads of a known patient, read in one round trip before the commit: the
 * record hash's version, sealed clinical record and query stamp (`q_version`, `q_categories`), the
 * presets, the opt-out flag, and the survivor a merge retired the patient into (if it was).
 */
export interface StoredState {
  version: number;
  /** The sealed clinical record (`RecordStore.openClinical` opens it), absent when none. */
  sealedClinical: string | undefined;
  /** The version and categories the stored version's queries were opened for. */
  queriesOpened: { version: number; categories: string } | undefined;
  /** Preset category -> its stored value (`{source, created_at}` as JSON). */
  presets: Record<string, string>;
  optedOut: boolean;
  /** Set when a merge retired this patient: updates go to this service id instead. */
  survivor: string | undefined;
  /**
   * With a `lookupKey` read along: true when that entry no longer names the patient (purged,
   * re-created): the service id came from an outdated cache entry, and the rest means nothing.
   */
  stale: boolean;
}

/**
 * True when a message that leaves the record as it was would open no query: the commit script's
 * "no work for nothing" answer (`unchanged`) computed from a {@link StoredState}, so that the
 * script need not run. It mirrors the script: the problem-list presets already match the record,
 * and the stored version's queries were opened for exactly these categories (presets, sorted, then
 * the update's extra categories). An opted-out patient is never fresh (the script decides).
 */
export function queriesAreFresh(
  state: StoredState,
  problemList: readonly string[] | undefined,
  extraCategories: readonly string[],
): boolean {
  if (state.optedOut || state.queriesOpened?.version !== state.version) return false;
  if (problemList !== undefined) {
    const wanted = new Set(problemList);
    if (problemList.some((category) => !(category in state.presets))) return false;
    for (const [category, value] of Object.entries(state.presets)) {
      if (!wanted.has(category) && presetSource(value) === 'problem_list') return false;
    }
  }
  const categories = Object.keys(state.presets).sort(byteOrder);
  const seen = new Set(categories);
  for (const category of extraCategories) {
    if (!seen.has(category)) {
      seen.add(category);
      categories.push(category);
    }
  }
  return categories.join(',') === state.queriesOpened.categories;
}

/**
 * Reads a {@link StoredState}: KEYS record, presets, opt-out flag, retired key, and (optional) the
 * local id's lookup entry, whose service id comes last (false when it has none).
 */
const READ_STATE = new LuaScript(`
local named = false
if KEYS[5] then named = redis.call('HGET', KEYS[5], 'psid') end
return {
  redis.call('HMGET', KEYS[1], 'version', 'clinical', 'q_version', 'q_categories'),
  redis.call('HGETALL', KEYS[2]),
  redis.call('EXISTS', KEYS[3]),
  redis.call('GET', KEYS[4]),
  named
}
`);

/** Lua's `table.sort` on strings compares bytes. */
const byteOrder = (a: string, b: string) =>
  Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

function presetSource(value: string): unknown {
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === 'object' && parsed !== null && 'source' in parsed
      ? parsed.source
      : undefined;
  } catch {
    return undefined;
  }
}

export interface UpdateCommitterOptions {
  redis: RedisClient;
  /**
   * A prefix, or the partitions: every key of one commit is its patient's partition's (a merge
   * across two partitions is two scripts, see {@link RETIRE_PRIOR}).
   */
  prefix: KeySpace;
  records: RecordStore;
  presets: PresetStore;
  idempotency: IdempotencyStore;
  /** `queries.debounce_ms`: a new query is due this long after its first update. */
  debounceMs: number;
  /**
   * `privacy.record_retention_days` in seconds: a record (and its query state) not updated for
   * this long expires. 0 keeps records until purged.
   * @defaultValue 0
   */
  retentionSeconds?: number;
  /** Counts each query opened or joined (`cw_queries_enqueued_total`). */
  onQuery?: (coalesced: boolean) => void;
  /** Counts each update that changed nothing and opened no query (`cw_updates_unchanged_total`). */
  onUnchanged?: () => void;
  /**
   * Counts each update stored, whatever its feed, unchanged ones included
   * (`cw_record_updates_stored_total`: the feed-silence signal).
   */
  onStored?: () => void;
}

/** Applies one message's changes in one Redis script: see {@link COMMIT}. */
export class UpdateCommitter {
  readonly #o: UpdateCommitterOptions;

  constructor(options: UpdateCommitterOptions) {
    this.#o = options;
  }

  /**
   * The committer of the ingest process: `queries.debounce_ms`, `ingest.idempotency_ttl_s`,
   * `privacy.record_retention_days`, and `cw_queries_enqueued_total` on `registry`.
   */
  static fromConfig(deps: {
    config: Pick<Config, 'queries' | 'ingest' | 'privacy' | 'redis'>;
    redis: RedisClient;
    records: RecordStore;
    presets: PresetStore;
    registry: Registry;
    /** The partitions. @defaultValue those of `config.redis` */
    keySpace?: KeySpace;
  }): UpdateCommitter {
    const { config, redis } = deps;
    const metrics = new IngestMetrics(deps.registry);
    const keySpace = deps.keySpace ?? Partitions.of(config.redis);
    return new UpdateCommitter({
      redis,
      prefix: keySpace,
      records: deps.records,
      presets: deps.presets,
      idempotency: new IdempotencyStore({
        redis,
        prefix: keySpace,
        ttlSeconds: config.ingest.idempotency_ttl_s,
      }),
      debounceMs: config.queries.debounce_ms,
      retentionSeconds: config.privacy.record_retention_days * 86_400,
      onQuery: (coalesced) => metrics.countQuery(coalesced),
      onUnchanged: () => metrics.countUnchanged(),
      onStored: () => metrics.countStored(),
    });
  }

  /**
   * The {@link StoredState} of a known patient, in one round trip (a read-only script: all its
   * keys share the patient's hash tag). `retiredKey` is `Crosswalk.retiredKeyOf(patientServiceId)`.
   * A script rather than a pipeline: an ioredis pipeline copies every script BullMQ defined on the
   * connection onto itself, which cost more CPU than the reads (measured with the mllp bench).
   */
  async storedState(
    patientServiceId: string,
    retiredKey: string,
    lookupKey?: string,
  ): Promise<StoredState> {
    const { redis, records, presets } = this.#o;
    const prefix = patientPrefix(this.#o.prefix, patientServiceId);
    const keys = [
      records.keyOf(patientServiceId),
      presets.keyOf(patientServiceId),
      optOutKey(prefix, patientServiceId),
      retiredKey,
    ];
    if (lookupKey !== undefined) keys.push(lookupKey);
    const [fields, flatPresets, optedOut, survivor, named] = (await READ_STATE.run(
      redis,
      keys,
      [],
    )) as [(string | null)[], string[], number, string | null, string | null | undefined];
    const [version, clinical, qVersion, qCategories] = fields.map((v) =>
      typeof v === 'string' ? v : undefined,
    );
    const presetsOf: Record<string, string> = {};
    for (let i = 0; i + 1 < flatPresets.length; i += 2) {
      presetsOf[flatPresets[i] as string] = flatPresets[i + 1] as string;
    }
    return {
      version: Number(version ?? 0),
      sealedClinical: clinical,
      queriesOpened:
        qVersion === undefined
          ? undefined
          : { version: Number(qVersion), categories: qCategories ?? '' },
      presets: presetsOf,
      optedOut: optedOut === 1,
      survivor: typeof survivor === 'string' ? survivor : undefined,
      stale: lookupKey !== undefined && named !== patientServiceId,
    };
  }

  /** Counts an update answered unchanged without running the script (see {@link queriesAreFresh}). */
  countUnchanged(): void {
    this.#o.onUnchanged?.();
  }

  async commit(input: CommitInput): Promise<CommitResult> {
    const space = this.#o.prefix;
    const merge = input.merge;
    if (
      merge !== undefined &&
      patientPrefix(space, merge.priorPatientServiceId) !==
        patientPrefix(space, input.patientServiceId)
    ) {
      return this.#mergeAcross(input, merge);
    }
    return this.#commit(input, '');
  }

  /**
   * A merge across two partitions: the survivor's commit with the prior's presets as read, then
   * {@link RETIRE_PRIOR} in the prior's partition; `conflict` when the prior changed in between.
   */
  async #mergeAcross(
    input: CommitInput,
    merge: NonNullable<CommitInput['merge']>,
  ): Promise<CommitResult> {
    const { redis, records, presets } = this.#o;
    const prior = merge.priorPatientServiceId;
    const read = await redis.hgetall(presets.keyOf(prior));
    const snapshot = JSON.stringify(Object.entries(read).flat());
    const { merge: _merge, ...survivorPart } = input;
    const result = await this.#commit(survivorPart, snapshot);
    if (result.status !== 'ok' && result.status !== 'unchanged') return result;
    const retired = await redis.eval(
      RETIRE_PRIOR,
      3,
      presets.keyOf(prior),
      records.keyOf(prior),
      merge.retiredKey ?? records.keyOf(prior),
      merge.priorExpectedVersion,
      snapshot,
      input.patientServiceId,
      merge.retiredKey === undefined ? '0' : '1',
    );
    return retired === 1 ? result : { status: 'conflict' };
  }

  async #commit(input: CommitInput, movedPresets: string): Promise<CommitResult> {
    const { keys, args } = this.#call(input, movedPresets);
    return this.#result(input, (await COMMIT.run(this.#o.redis, keys, args)) as unknown[]);
  }

  /**
   * Commits many JSON record updates (a batch): those of one partition in one script call per
   * {@link MAX_ITEMS_PER_SCRIPT} items ({@link COMMIT_MANY}), the partitions side by side, each
   * partition's items in their order. Answers one result per input, in input order; resolves only
   * once every call has answered (every committed item is durable).
   *
   * A call writes nothing when one of its items is refused (see {@link COMMIT_MANY}): those items
   * answer `stale`, `retired`, `conflict` or `missing`, the others of that call `skipped` (not
   * written: commit them again), and that partition's later calls are not made (`skipped` too),
   * so that a patient's updates are never applied out of order. Only JSON records (`put`, `keep`),
   * without merges.
   */
  async commitMany(inputs: readonly CommitInput[]): Promise<ManyCommitResult[]> {
    const results = new Array<ManyCommitResult>(inputs.length);
    const byPartition = new Map<string, number[]>();
    inputs.forEach((input, i) => {
      if (input.record.kind === 'clinical' || input.merge !== undefined) {
        throw new TypeError('commitMany takes JSON record updates only (put or keep, no merge)');
      }
      const prefix = patientPrefix(this.#o.prefix, input.patientServiceId);
      const group = byPartition.get(prefix);
      if (group === undefined) byPartition.set(prefix, [i]);
      else group.push(i);
    });
    await Promise.all(
      [...byPartition.values()].map(async (indexes) => {
        for (let from = 0; from < indexes.length; from += MAX_ITEMS_PER_SCRIPT) {
          const chunk = indexes.slice(from, from + MAX_ITEMS_PER_SCRIPT);
          const keys: string[] = [];
          const args: (string | number)[] = [chunk.length];
          for (const i of chunk) {
            const call = this.#call(inputs[i] as CommitInput, '');
            keys.push(...call.keys);
            args.push(...call.args);
          }
          const reply = (await COMMIT_MANY.run(this.#o.redis, keys, args)) as unknown[];
          if (reply[0] === 'refused') {
            const refused = chunk[Number(reply[1]) - 1] as number;
            for (const i of indexes.slice(from)) results[i] = { status: 'skipped' };
            results[refused] = { status: String(reply[2]) as RefusedStatus };
            return;
          }
          const replies = reply[1] as unknown[][];
          chunk.forEach((i, j) => {
            results[i] = this.#result(inputs[i] as CommitInput, replies[j] as unknown[]);
          });
        }
      }),
    );
    return results;
  }

  /** The KEYS and ARGV of {@link COMMIT_BODY} for one commit. */
  #call(input: CommitInput, movedPresets: string): { keys: string[]; args: (string | number)[] } {
    const { records, presets, idempotency } = this.#o;
    const psid = input.patientServiceId;
    const prefix = patientPrefix(this.#o.prefix, psid);
    const recordKey = records.keyOf(psid);
    const presetsKey = presets.keyOf(psid);
    const remember = input.remember === true;
    const verify = input.newPatient === undefined ? input.verify : undefined;
    const keys = [
      recordKey,
      presetsKey,
      remember ? idempotency.keyOf(psid, input.eventId) : recordKey,
      queryOutboxKey(prefix),
      optOutKey(prefix, psid),
      input.newPatient?.forwardKey ?? verify?.lookupKey ?? recordKey,
      input.newPatient?.reverseKey ?? recordKey,
      input.merge ? presets.keyOf(input.merge.priorPatientServiceId) : presetsKey,
      input.merge ? records.keyOf(input.merge.priorPatientServiceId) : recordKey,
      input.merge?.retiredKey ?? recordKey,
      verify?.retiredKey ?? recordKey,
    ];
    const write = input.record;
    const args = [
      write.kind,
      write.kind === 'clinical' ? write.expectedVersion : 0,
      write.kind === 'keep' ? '' : write.sealed,
      input.now.toISOString(),
      input.now.getTime() + this.#o.debounceMs,
      input.eventId,
      psid,
      queryStateKey(prefix, psid, ''),
      MAX_TRIGGER_IDS,
      input.problemList === undefined ? '0' : '1',
      JSON.stringify(input.problemList ?? []),
      JSON.stringify(input.extraCategories),
      this.#o.retentionSeconds ?? 0,
      remember ? idempotency.ttlSeconds : 0,
      input.newPatient ? '1' : '0',
      input.newPatient?.sealedLocalId ?? '',
      input.merge ? '1' : '0',
      input.merge?.priorExpectedVersion ?? 0,
      queryJobIdPrefix(psid),
      write.kind === 'put' ? write.contentHmac : '',
      input.onlyIfStale === true ? '1' : '0',
      input.merge?.retiredKey === undefined ? '0' : '1',
      movedPresets,
      verify === undefined ? '0' : '1',
    ];
    return { keys, args };
  }

  /** One commit's reply as a {@link CommitResult}, counted in the metrics. */
  #result(input: CommitInput, reply: unknown[]): CommitResult {
    const psid = input.patientServiceId;
    switch (reply[0]) {
      case 'duplicate':
        return { status: 'duplicate', answer: JSON.parse(String(reply[1])) as unknown };
      case 'conflict':
        return { status: 'conflict' };
      case 'missing':
        return { status: 'missing' };
      case 'stale':
        return { status: 'stale' };
      case 'retired':
        return { status: 'retired' };
      case 'unchanged':
        this.#o.onUnchanged?.();
        this.#o.onStored?.();
        return { status: 'unchanged', version: Number(reply[1]) };
    }
    const flat = reply[3] as (string | number)[];
    const queries: ScheduledQuery[] = [];
    for (let i = 0; i < flat.length; i += 3) {
      const category = String(flat[i]);
      const coalesced = Number(flat[i + 2]) === 1;
      queries.push({
        ccsr_category: category,
        job_id: queryJobId(psid, category, Number(flat[i + 1])),
        coalesced,
      });
      this.#o.onQuery?.(coalesced);
    }
    this.#o.onStored?.();
    return { status: 'ok', version: Number(reply[1]), optedOut: Number(reply[2]) === 1, queries };
  }
}
