import { Queue, type Telemetry } from 'bullmq';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { deliveryTraceKey } from '../trace/trace-keys.ts';
import { sealOutboundEvent, type OutboundEvent } from './outbound-event.ts';
import { OutboundKeyring, type OutboundKeys } from './outbound-keyring.ts';
import type { OutboundQueueMetrics } from './outbound-queue-metrics.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import type { DeliveryChannel } from './result-sink.ts';

/** How often, at most, waiting events past their retention are looked for (on a hand-over). */
const TRIM_EVERY_MS = 60_000;
/** How many expired events one trim call removes at most (it repeats until fewer come back). */
const TRIM_BATCH = 1_000;

export interface OutboundQueueChannelOptions {
  connection: RedisClient;
  prefix: string;
  /** @defaultValue 'concordance-results' */
  name: string;
  /** `delivery.outbound_queue.retention`. */
  retention: { count: number; age_s: number; waiting_age_s: number };
  /**
   * Seals each event's `patient_id` (see `openOutboundEvent`): the `OUTBOUND_KEY` text (key `0`),
   * or the keyring of `OUTBOUND_KEYS` (its first key seals).
   */
  key: string | OutboundKeys;
  metrics?: OutboundQueueMetrics;
  /**
   * The message trace: each event's delivery trace (in its patient's partition of `prefix`) notes
   * `outbound_at` once added, kept `ttlS` seconds. @defaultValue none (the trace off)
   */
  trace?: { prefix: KeySpace; ttlS: number };
  /** BullMQ's `telemetry` (bullmq-otel) when tracing is on: each add is a producer span. */
  telemetry?: Telemetry | undefined;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * Hands result events to the hospital's own consumers through a BullMQ queue, `patient_id`
 * sealed under `OUTBOUND_KEY` or the sealing key of `OUTBOUND_KEYS` (an {@link OutboundEvent}). The job id is the event id, so a
 * redelivery after a crash adds nothing. Bounded: consumed events are kept `retention.count` /
 * `age_s`; events nobody consumes are dropped after `waiting_age_s`.
 */
export class OutboundQueueChannel implements DeliveryChannel {
  readonly name = 'queue';
  readonly queue: Queue<OutboundEvent>;
  readonly #retention: OutboundQueueChannelOptions['retention'];
  readonly #keys: OutboundKeys;
  readonly #metrics: OutboundQueueMetrics | undefined;
  readonly #now: () => number;
  readonly #connection: RedisClient;
  readonly #trace: OutboundQueueChannelOptions['trace'];
  #lastTrim = 0;

  constructor({
    connection,
    prefix,
    name,
    retention,
    key,
    metrics,
    trace,
    telemetry,
    now = Date.now,
  }: OutboundQueueChannelOptions) {
    this.#connection = connection;
    this.#trace = trace !== undefined && trace.ttlS > 0 ? trace : undefined;
    this.queue = new Queue<OutboundEvent>(name, {
      connection,
      prefix,
      ...(telemetry === undefined ? {} : { telemetry }),
    });
    this.#retention = retention;
    this.#keys = typeof key === 'string' ? OutboundKeyring.legacy(key) : key;
    this.#metrics = metrics;
    this.#now = now;
  }

  async deliver(event: ResultEvent): Promise<void> {
    await this.deliverMany([event]);
  }

  /** Hands several events over in one bulk add (each job id is its event id). */
  async deliverMany(events: readonly ResultEvent[]): Promise<void> {
    const keep = { count: this.#retention.count, age: this.#retention.age_s };
    const timestamp = this.#now();
    const jobs = events.map((event) => ({
      name: event.type,
      data: sealOutboundEvent(event, this.#keys),
      opts: { jobId: event.id, timestamp, removeOnComplete: keep, removeOnFail: keep },
    }));
    if (jobs.length === 1) {
      const [job] = jobs as [(typeof jobs)[number]];
      await this.queue.add(job.name, job.data, job.opts);
    } else if (jobs.length > 1) {
      await this.queue.addBulk(jobs);
    }
    await this.#traceHandOver(events, this.#now());
    if (this.#now() - this.#lastTrim >= TRIM_EVERY_MS) await this.trimExpired();
  }

  /**
   * Notes `outbound_at` in each event's delivery trace. The add is BullMQ's own script, which
   * writes no trace of ours: one MULTI per partition after it (the only extra round trip of the
   * trace, and only with the outbound queue on).
   */
  async #traceHandOver(events: readonly ResultEvent[], at: number): Promise<void> {
    const trace = this.#trace;
    if (trace === undefined || events.length === 0) return;
    const byPrefix = new Map<string, string[]>();
    for (const event of events) {
      const prefix = patientPrefix(trace.prefix, event.patient_service_id);
      byPrefix.set(prefix, [...(byPrefix.get(prefix) ?? []), event.id]);
    }
    await Promise.all(
      [...byPrefix].map(([prefix, ids]) => {
        const multi = this.#connection.multi();
        for (const id of ids) {
          const key = deliveryTraceKey(prefix, id);
          multi.hset(key, 'outbound_at', at).expire(key, trace.ttlS);
        }
        return multi.exec();
      }),
    );
  }

  /**
   * Drops waiting events older than `retention.waiting_age_s` (nobody consumed them); returns how
   * many. Runs on a hand-over at most once a minute: when nothing is handed over, nothing grows.
   * The cut-off is taken from this channel's clock, the one that stamped the events: not
   * `queue.clean`, which measures the grace against `Date.now()`.
   */
  async trimExpired(): Promise<number> {
    const now = this.#now();
    this.#lastTrim = now;
    const cutoff = now - this.#retention.waiting_age_s * 1_000;
    const backend = this.queue.getBackend();
    let removed = 0;
    for (;;) {
      const ids = await backend.cleanJobsByState('wait', cutoff, TRIM_BATCH);
      removed += ids.length;
      if (ids.length < TRIM_BATCH) break;
    }
    if (removed > 0) this.#metrics?.expired.inc({ queue: this.queue.name }, removed);
    return removed;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
