import { allPrefixes, patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import {
  DeliveryTraceSchema,
  MessageReceiptSchema,
  QueryTraceSchema,
  type DeliveryTrace,
  type MessageReceipt,
  type QueryTrace,
} from './message-trace.ts';
import {
  deliveryTraceKey,
  patientMessagesKey,
  queryTraceKey,
  receiptsKey,
  recentMessagesKey,
  type Feed,
} from './trace-keys.ts';

/** One query a receipt opened or joined, with the steps kept of it and of its result's delivery. */
export interface QueryStepTrace {
  category: string;
  seq: number;
  /** True when the message joined a query another message had opened. */
  coalesced: boolean;
  /** The query's steps; null when none are kept (not written yet, expired, or unreadable). */
  trace: QueryTrace | null;
  /** The delivery of its result event (named by the trace's `event_id`); null when none. */
  delivery: DeliveryTrace | null;
}

/**
 * One receipt, as read: the stored receipt without its sealed `raw` (`has_raw` says whether one is
 * kept; `raw` itself only when asked for with `sealedRaw`), and its queries joined with their steps.
 */
export type ReceiptTrace = Omit<MessageReceipt, 'raw' | 'queries'> & {
  /** The partition whose keys hold it. */
  partition: number;
  has_raw: boolean;
  /** The message as received, still sealed (only with `sealedRaw`). */
  raw?: string;
  queries: QueryStepTrace[];
};

/** Everything kept about one control id: its receipts in every partition, oldest first. */
export interface MessageTrace {
  control_id: string;
  receipts: ReceiptTrace[];
  /** Entries that could not be read (not JSON, or not of the schema): skipped, never thrown. */
  skipped: number;
}

/** One row of the Messages page: a control id and its newest receipt (of one partition). */
export interface RecentMessage {
  control_id: string;
  partition: number;
  /** The index's score: the time of its newest receipt, epoch ms. */
  at: number;
  /** Receipts kept under the control id in this partition (resends add one each). */
  receipts: number;
  /** The newest receipt, without `raw`, its queries as stored (no steps). */
  latest: Omit<MessageReceipt, 'raw'> & { has_raw: boolean };
}

export interface RecentPage {
  messages: RecentMessage[];
  /** Pass as `before` for the next (older) page; null when there is none. */
  next_before: number | null;
  skipped: number;
}

export interface MessageTraceReaderOptions {
  redis: RedisClient;
  /** A prefix, or the partitions: every partition is read. */
  space: KeySpace;
}

/** Control ids of one patient read at most (`byPatient`). */
export const MAX_PATIENT_MESSAGES = 500;
/** Rows of one `recent` page at most. */
export const MAX_RECENT = 500;
/** Index entries `recent` reads per round, and rounds at most (a `feed` filter may skip many). */
const RECENT_BATCH = 200;
const RECENT_ROUNDS = 10;

type PipelineResult = [Error | null, unknown][] | null;

/** The hash of an HGETALL answer parsed with `schema`: null when empty, 'bad' when unreadable. */
function parseHash<T>(
  reply: [Error | null, unknown] | undefined,
  parse: (value: unknown) => { success: true; data: T } | { success: false },
): T | null | 'bad' {
  if (reply === undefined) return null;
  const [err, value] = reply;
  if (err !== null) return 'bad';
  if (typeof value !== 'object' || value === null || Object.keys(value).length === 0) return null;
  const parsed = parse(value);
  return parsed.success ? parsed.data : 'bad';
}

/** A receipt's JSON parsed with the schema; undefined when it is not one. */
function parseReceipt(text: unknown): MessageReceipt | undefined {
  if (typeof text !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = MessageReceiptSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

function withoutRaw(receipt: MessageReceipt): Omit<MessageReceipt, 'raw'> & { has_raw: boolean } {
  const { raw, ...rest } = receipt;
  return { ...rest, has_raw: typeof raw === 'string' && raw !== '' };
}

/**
 * Reads the message trace (docs/message-trace.md) of every partition: what the queue view's
 * Messages page, `concordance-worker trace` and the admin route show. Reads only; an entry that
 * cannot be read is skipped and counted (`skipped`), never thrown. Each partition is read with one
 * pipeline per level (receipts, their queries' steps, their results' deliveries), the partitions
 * side by side.
 */
export class MessageTraceReader {
  readonly #redis: RedisClient;
  readonly #space: KeySpace;
  readonly #prefixes: readonly string[];

  constructor({ redis, space }: MessageTraceReaderOptions) {
    this.#redis = redis;
    this.#space = space;
    this.#prefixes = allPrefixes(space);
  }

  /**
   * Every receipt of `controlId` in any partition, oldest first, each with its queries' steps
   * and their deliveries. No receipt: `receipts` is empty. `sealedRaw` keeps the sealed message
   * of each receipt that has one (for `trace --raw`; see `openTraceRaw`).
   */
  async byControlId(
    controlId: string,
    options: { sealedRaw?: boolean } = {},
  ): Promise<MessageTrace> {
    const read = await Promise.all(
      this.#prefixes.map((_, partition) =>
        this.#load(partition, [controlId], undefined, options.sealedRaw === true),
      ),
    );
    const receipts = read.flatMap((r) => r.traces.get(controlId) ?? []);
    receipts.sort((a, b) => a.at - b.at || a.partition - b.partition);
    return {
      control_id: controlId,
      receipts,
      skipped: read.reduce((n, r) => n + r.skipped, 0),
    };
  }

  /**
   * The messages of one patient (its service id): the control ids of its index, newest first (at
   * most `limit`, default 50), each with the patient's own receipts only (a control id another
   * sender reused for another patient shows none of that patient's), read in its partition.
   */
  async byPatient(
    patientServiceId: string,
    options: { limit?: number; sealedRaw?: boolean } = {},
  ): Promise<{ messages: MessageTrace[]; skipped: number }> {
    const limit = Math.min(Math.max(options.limit ?? 50, 1), MAX_PATIENT_MESSAGES);
    const prefix = patientPrefix(this.#space, patientServiceId);
    const partition = this.#prefixes.indexOf(prefix);
    const controlIds = await this.#redis.zrevrange(
      patientMessagesKey(prefix, patientServiceId),
      0,
      limit - 1,
    );
    if (controlIds.length === 0) return { messages: [], skipped: 0 };
    const { traces, skipped } = await this.#load(
      partition,
      controlIds,
      patientServiceId,
      options.sealedRaw === true,
    );
    const messages = controlIds
      .map((controlId) => ({
        control_id: controlId,
        receipts: traces.get(controlId) ?? [],
        skipped: 0,
      }))
      .filter((m) => m.receipts.length > 0);
    return { messages, skipped };
  }

  /**
   * The newest messages across partitions (the partitions' `trace:recent` merged by time), at most
   * `limit`, of one `feed` (the newest receipt's) when given, older than `before` (epoch ms,
   * exclusive) when given. A control id received in two partitions (refused before its patient
   * was known, then stored) is a row per partition.
   */
  async recent(options: { feed?: Feed; limit: number; before?: number }): Promise<RecentPage> {
    const limit = Math.min(Math.max(Math.trunc(options.limit), 1), MAX_RECENT);
    const messages: RecentMessage[] = [];
    const seen = new Set<string>();
    let skipped = 0;
    let max = options.before === undefined ? '+inf' : `(${options.before}`;
    for (let round = 0; round < RECENT_ROUNDS && messages.length < limit; round++) {
      const batch = Math.max(RECENT_BATCH, limit);
      const perPartition = await Promise.all(
        this.#prefixes.map((prefix) =>
          this.#redis.zrevrangebyscore(
            recentMessagesKey(prefix),
            max,
            '-inf',
            'WITHSCORES',
            'LIMIT',
            0,
            batch,
          ),
        ),
      );
      const candidates: { partition: number; controlId: string; at: number }[] = [];
      let full = false;
      perPartition.forEach((flat, partition) => {
        if (flat.length >= batch * 2) full = true;
        for (let i = 0; i + 1 < flat.length; i += 2) {
          const controlId = flat[i] as string;
          if (seen.has(`${partition}\u0000${controlId}`)) continue;
          candidates.push({ partition, controlId, at: Number(flat[i + 1]) });
        }
      });
      candidates.sort((a, b) => b.at - a.at || a.partition - b.partition);
      const taken = candidates.slice(0, batch);
      if (taken.length === 0) break;
      for (const c of taken) seen.add(`${c.partition}\u0000${c.controlId}`);
      const read = await this.#newest(taken);
      skipped += read.skipped;
      for (const row of read.rows) {
        if (messages.length >= limit) break;
        if (options.feed === undefined || row.latest.feed === options.feed) messages.push(row);
      }
      // Inclusive from here on (ties of the last score are told apart by `seen`).
      max = String(taken[taken.length - 1]?.at ?? 0);
      if (!full && taken.length === candidates.length) break;
    }
    const last = messages[messages.length - 1];
    return {
      messages,
      next_before: messages.length >= limit && last !== undefined ? last.at : null,
      skipped,
    };
  }

  /** The newest receipt and the receipt count of each candidate (a pipeline per partition). */
  async #newest(
    candidates: readonly { partition: number; controlId: string; at: number }[],
  ): Promise<{ rows: RecentMessage[]; skipped: number }> {
    const byPartition = new Map<number, typeof candidates>();
    for (const c of candidates) {
      byPartition.set(c.partition, [...(byPartition.get(c.partition) ?? []), c]);
    }
    const found = new Map<string, RecentMessage>();
    let skipped = 0;
    await Promise.all(
      [...byPartition].map(async ([partition, list]) => {
        const prefix = this.#prefixes[partition] as string;
        const pipeline = this.#redis.pipeline();
        for (const c of list) {
          pipeline.lindex(receiptsKey(prefix, c.controlId), -1);
          pipeline.llen(receiptsKey(prefix, c.controlId));
        }
        const replies = ((await pipeline.exec()) as PipelineResult) ?? [];
        list.forEach((c, i) => {
          const [err, text] = replies[2 * i] ?? [null, null];
          const count = Number(replies[2 * i + 1]?.[1] ?? 0);
          if (err === null && text === null) return; // expired or purged since
          const receipt = err === null ? parseReceipt(text) : undefined;
          if (receipt === undefined) {
            skipped += 1;
            return;
          }
          found.set(`${partition}\u0000${c.controlId}`, {
            control_id: c.controlId,
            partition,
            at: c.at,
            receipts: count,
            latest: withoutRaw(receipt),
          });
        });
      }),
    );
    const rows = candidates.flatMap((c) => {
      const row = found.get(`${c.partition}\u0000${c.controlId}`);
      return row === undefined ? [] : [row];
    });
    return { rows, skipped };
  }

  /**
   * The receipts of `controlIds` in one partition (of `onlyPatient` alone when given), joined with
   * their queries' steps and deliveries: three pipelines, one per level.
   */
  async #load(
    partition: number,
    controlIds: readonly string[],
    onlyPatient: string | undefined,
    sealedRaw: boolean,
  ): Promise<{ traces: Map<string, ReceiptTrace[]>; skipped: number }> {
    const prefix = this.#prefixes[partition] as string;
    let skipped = 0;

    const lists = this.#redis.pipeline();
    for (const id of controlIds) lists.lrange(receiptsKey(prefix, id), 0, -1);
    const listReplies = ((await lists.exec()) as PipelineResult) ?? [];
    const receipts = new Map<string, MessageReceipt[]>();
    controlIds.forEach((id, i) => {
      const [err, entries] = listReplies[i] ?? [null, []];
      if (err !== null || !Array.isArray(entries)) {
        skipped += 1;
        return;
      }
      const kept: MessageReceipt[] = [];
      for (const text of entries) {
        const receipt = parseReceipt(text);
        if (receipt === undefined) skipped += 1;
        else if (onlyPatient === undefined || receipt.psid === onlyPatient) kept.push(receipt);
      }
      if (kept.length > 0) receipts.set(id, kept);
    });

    // Level 2: each query once, however many messages joined it.
    const queryKeys = new Set<string>();
    for (const list of receipts.values()) {
      for (const r of list) {
        if (r.psid === null) continue;
        for (const q of r.queries) queryKeys.add(queryTraceKey(prefix, r.psid, q.category, q.seq));
      }
    }
    const queries = await this.#hashes([...queryKeys], (v) => QueryTraceSchema.safeParse(v));
    skipped += queries.skipped;

    // Level 3: the delivery of each query's result event.
    const eventKeys = new Set<string>();
    for (const q of queries.found.values()) {
      if (q.event_id !== undefined) eventKeys.add(deliveryTraceKey(prefix, q.event_id));
    }
    const deliveries = await this.#hashes([...eventKeys], (v) => DeliveryTraceSchema.safeParse(v));
    skipped += deliveries.skipped;

    const traces = new Map<string, ReceiptTrace[]>();
    for (const [id, list] of receipts) {
      traces.set(
        id,
        list.map((receipt) => {
          const { raw, queries: opened, ...rest } = receipt;
          const hasRaw = typeof raw === 'string' && raw !== '';
          return {
            ...rest,
            partition,
            has_raw: hasRaw,
            ...(sealedRaw && hasRaw ? { raw } : {}),
            queries: opened.map((q) => {
              const trace =
                receipt.psid === null
                  ? undefined
                  : queries.found.get(queryTraceKey(prefix, receipt.psid, q.category, q.seq));
              const delivery =
                trace?.event_id === undefined
                  ? undefined
                  : deliveries.found.get(deliveryTraceKey(prefix, trace.event_id));
              return { ...q, trace: trace ?? null, delivery: delivery ?? null };
            }),
          };
        }),
      );
    }
    return { traces, skipped };
  }

  /** HGETALL of each key in one pipeline, parsed; empty hashes are absent, unreadable counted. */
  async #hashes<T>(
    keys: readonly string[],
    parse: (value: unknown) => { success: true; data: T } | { success: false },
  ): Promise<{ found: Map<string, T>; skipped: number }> {
    const found = new Map<string, T>();
    if (keys.length === 0) return { found, skipped: 0 };
    const pipeline = this.#redis.pipeline();
    for (const key of keys) pipeline.hgetall(key);
    const replies = ((await pipeline.exec()) as PipelineResult) ?? [];
    let skipped = 0;
    keys.forEach((key, i) => {
      const value = parseHash(replies[i], parse);
      if (value === 'bad') skipped += 1;
      else if (value !== null) found.set(key, value);
    });
    return { found, skipped };
  }
}
