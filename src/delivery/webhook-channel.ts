import { Queue, type Telemetry } from 'bullmq';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import { allPrefixes, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import type { DeadLetter } from './dead-letter.ts';
import type { DeadLetterStore } from './dead-letter-store.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import type { DeliveryChannel } from './result-sink.ts';
import { WEBHOOK_DELIVERIES, type WebhookJobData } from './webhook-deliveries-queue.ts';
import { WebhookDeliveryJobs } from './webhook-delivery-jobs.ts';
import { queryKeyOf, WebhookDeliveryStore } from './webhook-delivery-store.ts';

export interface WebhookChannelOptions {
  connection: RedisClient;
  /**
   * A prefix, or the partitions: each partition has its own delivery queue and lines, and an
   * event goes to its patient's partition.
   */
  prefix: KeySpace;
  /** The crosswalk keys: a waiting event's `patient_id` rests sealed with them. */
  keys: CrosswalkKeys;
  /** BullMQ's `telemetry` (bullmq-otel) when tracing is on: each job's add is a producer span. */
  telemetry?: Telemetry | undefined;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/** What a re-drive did with a dead letter. */
export type RedriveOutcome =
  /** Back in its key's line, with a fresh clock. */
  | 'requeued'
  /** It was already waiting for delivery (re-driven twice); the letter was dropped. */
  | 'pending'
  /** It had been delivered after all; the letter was dropped, nothing is sent again. */
  | 'delivered';

/**
 * The producer side of the webhook: puts each event in its key's line in Redis and adds its
 * delivery job. Both steps are idempotent per event id, so a query job that hands the same event
 * over again after a crash adds nothing. The POSTs happen in `workers/webhook-deliveries.ts`.
 */
export class WebhookChannel implements DeliveryChannel {
  readonly name = 'webhook';
  readonly reportsOutcomes = true;
  /** The delivery queue of each partition. */
  readonly queues: readonly Queue<WebhookJobData>[];
  /** The delivery lines of each partition. */
  readonly stores: readonly WebhookDeliveryStore[];
  readonly #jobs: readonly WebhookDeliveryJobs[];
  readonly #space: KeySpace;
  readonly #redis: RedisClient;
  readonly #now: () => number;

  constructor({ connection, prefix, keys, telemetry, now = Date.now }: WebhookChannelOptions) {
    this.#space = prefix;
    const traced = telemetry === undefined ? {} : { telemetry };
    this.queues = allPrefixes(prefix).map(
      (p) => new Queue<WebhookJobData>(WEBHOOK_DELIVERIES, { connection, prefix: p, ...traced }),
    );
    this.stores = allPrefixes(prefix).map(
      (p) => new WebhookDeliveryStore({ redis: connection, prefix: p, keys }),
    );
    this.#jobs = this.queues.map((queue, i) => new WebhookDeliveryJobs(queue, this.#store(i)));
    this.#redis = connection;
    this.#now = now;
  }

  /** Partition 0's queue (the only one without partitions). */
  get queue(): Queue<WebhookJobData> {
    return this.queues[0] as Queue<WebhookJobData>;
  }

  /** Partition 0's lines (the only ones without partitions). */
  get store(): WebhookDeliveryStore {
    return this.#store(0);
  }

  #store(index: number): WebhookDeliveryStore {
    return this.stores[index] as WebhookDeliveryStore;
  }

  /** The partition of an event (its patient's). */
  #partitionOf(event: Pick<ResultEvent, 'patient_service_id'>): number {
    const space = this.#space;
    return typeof space === 'string' ? 0 : space.indexOf(event.patient_service_id);
  }

  async deliver(event: ResultEvent): Promise<void> {
    const p = this.#partitionOf(event);
    const { state, job } = await this.#store(p).enqueue(event, this.#now());
    // Also for `pending`: the first hand-over may have died between the store and the queue.
    if (state === 'new' || state === 'pending')
      await (this.#jobs[p] as WebhookDeliveryJobs).add(event.id, queryKeyOf(event), job);
  }

  /**
   * Puts a dead-lettered event back at the end of its key's line and removes its letter, in one
   * step; the delivery starts its max-age clock afresh. `deadLetters` is the store of the letter's
   * partition (its patient's: letters are kept where their delivery was).
   */
  async redrive(letter: DeadLetter, deadLetters: DeadLetterStore): Promise<RedriveOutcome> {
    const { event } = letter;
    const p = this.#partitionOf(event);
    const multi = this.#store(p).stageRequeue(this.#redis.multi(), event, this.#now());
    const results = await deadLetters.stageRemove(multi, event.id).exec();
    const first = results?.[0];
    if (first === undefined || first[0] !== null)
      throw first?.[0] ?? new Error('MULTI was discarded');
    const [state, job] = first[1] as [RedriveOutcome, string];
    if (state !== 'delivered') {
      await (this.#jobs[p] as WebhookDeliveryJobs).add(event.id, queryKeyOf(event), job);
    }
    return state;
  }

  async close(): Promise<void> {
    await Promise.all(this.queues.map((queue) => queue.close()));
  }
}
