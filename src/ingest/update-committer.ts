import type { Tracer } from '@opentelemetry/api';
import type { RedisClient } from '../queues/redis-client.ts';
import type { Registry } from 'prom-client';
import type { Config } from '../config/config-schema.ts';
import type { CrosswalkPlan } from '../identity/crosswalk.ts';
import type { PresetStore } from '../presets/preset-store.ts';
import { Partitions, patientPrefix, type KeySpace } from '../queues/partitions.ts';
import { optOutKey } from '../privacy/patient-consent.ts';
import { queryJobId, queryJobIdPrefix } from '../queries/query-job.ts';
import { queryOutboxKey, queryStateKey } from '../queries/query-outbox.ts';
import { MAX_TRIGGER_IDS } from '../queries/query-state.ts';
import { LuaScript } from '../queues/lua-script.ts';
import type { ScheduledQuery } from '../queries/query-scheduler.ts';
import type { RecordStore } from '../records/record-store.ts';
import { receiptHeadJson, rawSealContext, type ReceiptHead } from '../trace/receipt-head.ts';
import { ReceiptWriter, receiptSettings, type ReceiptSettings } from '../trace/receipt-writer.ts';
import { patientMessagesKey, receiptsKey, recentMessagesKey } from '../trace/trace-keys.ts';
import { inCommitSpan, partitionOf, queryTraceparent } from './commit-span.ts';
import { IdempotencyStore } from './idempotency-store.ts';
import { IngestMetrics } from './ingest-metrics.ts';

const COMMIT = LuaScript.load(new URL('./lua/commit.lua', import.meta.url));
const COMMIT_MANY = LuaScript.load(new URL('./lua/commit-many.lua', import.meta.url));
const RETIRE_PRIOR = LuaScript.load(new URL('./lua/retire-prior.lua', import.meta.url));

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
  /**
   * The message's receipt (docs/message-trace.md) without its outcome: with the trace on, the
   * script completes it from what it did (`ok`, `unchanged`, `duplicate`) and records it, with the
   * trace of each query opened or joined. Outcomes the caller retries write nothing.
   */
  receipt?: ReceiptHead | undefined;
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
 * Items per `lua/commit-many.lua` call: bounds how long one call holds Redis (each item is about a
 * dozen commands), while a batch still takes few round trips.
 */
export const MAX_ITEMS_PER_SCRIPT = 100;

/** The KEYS and ARGV of one commit of `lua/commit.lua` before its trace's (`lua/commit-many.lua`). */
const COMMIT_KEYS = 11;
const COMMIT_ARGS = 24;

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

const READ_STATE = LuaScript.load(new URL('./lua/read-state.lua', import.meta.url));

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
   * across two partitions is two scripts, see `lua/retire-prior.lua`).
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
  /** `trace.*` when the message trace is on. @defaultValue off: no receipt is written */
  trace?: ReceiptSettings | undefined;
  /**
   * With `trace.keep_raw`: seals a raw message under the crosswalk keys (`CrosswalkKeys.seal`).
   * @defaultValue none: no raw message is kept
   */
  sealRaw?: ((plaintext: string, context: string) => string) | undefined;
  /**
   * With tracing on: each script call gets a `redis.commit` span, and the queries a message opens
   * keep its ingest span's `traceparent` (the query trace's `tp`). @defaultValue off: no span work
   */
  tracer?: Tracer | undefined;
}

/** Applies one message's changes in one Redis script: see `lua/commit.lua`. */
export class UpdateCommitter {
  readonly #o: UpdateCommitterOptions;
  /** Writes the receipt of a message that stores nothing; undefined when the trace is off. */
  readonly receipts: ReceiptWriter | undefined;

  constructor(options: UpdateCommitterOptions) {
    this.#o = options;
    this.receipts =
      options.trace === undefined
        ? undefined
        : new ReceiptWriter({
            redis: options.redis,
            prefix: options.prefix,
            settings: options.trace,
          });
  }

  /** Whether receipts are written (`trace.enabled`). */
  get tracing(): boolean {
    return this.#o.trace !== undefined;
  }

  /**
   * A raw message sealed for its receipt (`trace.keep_raw`), or undefined when raw messages are
   * not kept (or the trace is off). Never kept in plain text.
   */
  sealRaw(raw: string | Buffer, controlId: string): string | undefined {
    if (this.#o.trace === undefined || this.#o.sealRaw === undefined) return undefined;
    const text = typeof raw === 'string' ? raw : raw.toString('latin1');
    return this.#o.sealRaw(text, rawSealContext(controlId));
  }

  /**
   * The committer of the ingest process: `queries.debounce_ms`, `ingest.idempotency_ttl_s`,
   * `privacy.record_retention_days`, and `cw_queries_enqueued_total` on `registry`.
   */
  static fromConfig(deps: {
    config: Pick<Config, 'queries' | 'ingest' | 'privacy' | 'redis'> & {
      /** @defaultValue the trace off */
      trace?: Config['trace'] | undefined;
    };
    redis: RedisClient;
    /**
     * The crosswalk keys, which seal raw messages with `trace.keep_raw`.
     * @defaultValue none: raw messages are not kept
     */
    keys?: { seal(plaintext: string, context: string): string } | undefined;
    records: RecordStore;
    presets: PresetStore;
    registry: Registry;
    /** The partitions. @defaultValue those of `config.redis` */
    keySpace?: KeySpace;
    /** With tracing on (see {@link UpdateCommitterOptions.tracer}). @defaultValue off */
    tracer?: Tracer | undefined;
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
      trace: config.trace === undefined ? undefined : receiptSettings(config.trace),
      sealRaw:
        config.trace?.keep_raw === true && deps.keys !== undefined
          ? (plaintext, context) =>
              (deps.keys as NonNullable<typeof deps.keys>).seal(plaintext, context)
          : undefined,
      tracer: deps.tracer,
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
    const tracer = this.#o.tracer;
    // Read before the commit's own span: the message's ingest span is what its queries carry.
    const tp = queryTraceparent(tracer);
    const at = { operation: 'commit', partition: partitionOf(space, input.patientServiceId) };
    return inCommitSpan(
      tracer,
      at,
      () =>
        merge !== undefined &&
        patientPrefix(space, merge.priorPatientServiceId) !==
          patientPrefix(space, input.patientServiceId)
          ? this.#mergeAcross(input, merge, tp)
          : this.#commit(input, '', tp),
      (result) => result.status,
    );
  }

  /**
   * A merge across two partitions: the survivor's commit with the prior's presets as read, then
   * `lua/retire-prior.lua` in the prior's partition; `conflict` when the prior changed in between.
   */
  async #mergeAcross(
    input: CommitInput,
    merge: NonNullable<CommitInput['merge']>,
    tp: string,
  ): Promise<CommitResult> {
    const { redis, records, presets } = this.#o;
    const prior = merge.priorPatientServiceId;
    const read = await redis.hgetall(presets.keyOf(prior));
    const snapshot = JSON.stringify(Object.entries(read).flat());
    const { merge: _merge, ...survivorPart } = input;
    const result = await this.#commit(survivorPart, snapshot, tp);
    if (result.status !== 'ok' && result.status !== 'unchanged') return result;
    const retired = await RETIRE_PRIOR.run(
      redis,
      [presets.keyOf(prior), records.keyOf(prior), merge.retiredKey ?? records.keyOf(prior)],
      [
        merge.priorExpectedVersion,
        snapshot,
        input.patientServiceId,
        merge.retiredKey === undefined ? '0' : '1',
      ],
    );
    return retired === 1 ? result : { status: 'conflict' };
  }

  async #commit(input: CommitInput, movedPresets: string, tp: string): Promise<CommitResult> {
    const { keys, args } = this.#call(input, movedPresets, tp);
    return this.#result(input, (await COMMIT.run(this.#o.redis, keys, args)) as unknown[]);
  }

  /**
   * Commits many JSON record updates (a batch): those of one partition in one script call per
   * {@link MAX_ITEMS_PER_SCRIPT} items (`lua/commit-many.lua`), the partitions side by side, each
   * partition's items in their order. Answers one result per input, in input order; resolves only
   * once every call has answered (every committed item is durable).
   *
   * A call writes nothing when one of its items is refused (see `lua/commit-many.lua`): those items
   * answer `stale`, `retired`, `conflict` or `missing`, the others of that call `skipped` (not
   * written: commit them again), and that partition's later calls are not made (`skipped` too),
   * so that a patient's updates are never applied out of order. Only JSON records (`put`, `keep`),
   * without merges.
   */
  async commitMany(inputs: readonly CommitInput[]): Promise<ManyCommitResult[]> {
    const results = new Array<ManyCommitResult>(inputs.length);
    const tracer = this.#o.tracer;
    const tp = queryTraceparent(tracer);
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
          const traceKeys: string[] = [];
          const traceArgs: (string | number)[] = [];
          for (const i of chunk) {
            const call = this.#call(inputs[i] as CommitInput, '', tp);
            keys.push(...call.keys.slice(0, COMMIT_KEYS));
            traceKeys.push(...call.keys.slice(COMMIT_KEYS));
            args.push(...call.args.slice(0, COMMIT_ARGS));
            traceArgs.push(...call.args.slice(COMMIT_ARGS));
          }
          keys.push(...traceKeys);
          args.push(...traceArgs);
          const first = inputs[chunk[0] as number] as CommitInput;
          const reply = await inCommitSpan(
            tracer,
            {
              operation: 'commit-many',
              partition: partitionOf(this.#o.prefix, first.patientServiceId),
            },
            async () => (await COMMIT_MANY.run(this.#o.redis, keys, args)) as unknown[],
            (answer) => String(answer[0]),
          );
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

  /**
   * The KEYS and ARGV of `lua/commit.lua` for one commit; `tp` is the `traceparent` its queries
   * keep ('' for none).
   */
  #call(
    input: CommitInput,
    movedPresets: string,
    tp: string,
  ): { keys: string[]; args: (string | number)[] } {
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
    const trace = this.#o.trace;
    const receipt = trace === undefined ? undefined : input.receipt;
    if (receipt === undefined) keys.push(recordKey, recordKey, recordKey);
    else {
      keys.push(
        receiptsKey(prefix, receipt.controlId),
        patientMessagesKey(prefix, psid),
        recentMessagesKey(prefix),
      );
    }
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
      receipt === undefined ? '' : receiptHeadJson(receipt),
      receipt?.controlId ?? '',
      receipt?.feed ?? '',
      trace?.ttlSeconds ?? 0,
      trace?.maxReceipts ?? 0,
      receipt?.at.getTime() ?? 0,
      prefix,
      receipt === undefined ? '' : tp,
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
