import { Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import type { DeadLetter } from './dead-letter.ts';
import type { DeadLetterStore } from './dead-letter-store.ts';
import type { ResultEvent } from './result-event.ts';
import type { DeliveryChannel } from './result-sink.ts';
import { WEBHOOK_DELIVERIES, type WebhookJobData } from './webhook-deliveries-queue.ts';
import { WebhookDeliveryJobs } from './webhook-delivery-jobs.ts';
import { queryKeyOf, WebhookDeliveryStore } from './webhook-delivery-store.ts';

export interface WebhookChannelOptions {
  connection: RedisClient;
  prefix: string;
  /** The crosswalk keys: a waiting event's `patient_id` rests sealed with them. */
  keys: CrosswalkKeys;
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
  readonly queue: Queue<WebhookJobData>;
  readonly store: WebhookDeliveryStore;
  readonly #jobs: WebhookDeliveryJobs;
  readonly #redis: RedisClient;
  readonly #now: () => number;

  constructor({ connection, prefix, keys, now = Date.now }: WebhookChannelOptions) {
    this.queue = new Queue<WebhookJobData>(WEBHOOK_DELIVERIES, { connection, prefix });
    this.store = new WebhookDeliveryStore({ redis: connection, prefix, keys });
    this.#jobs = new WebhookDeliveryJobs(this.queue, this.store);
    this.#redis = connection;
    this.#now = now;
  }

  async deliver(event: ResultEvent): Promise<void> {
    const { state, job } = await this.store.enqueue(event, this.#now());
    // Also for `pending`: the first hand-over may have died between the store and the queue.
    if (state === 'new' || state === 'pending')
      await this.#jobs.add(event.id, queryKeyOf(event), job);
  }

  /**
   * Puts a dead-lettered event back at the end of its key's line and removes its letter, in one
   * step; the delivery starts its max-age clock afresh.
   */
  async redrive(letter: DeadLetter, deadLetters: DeadLetterStore): Promise<RedriveOutcome> {
    const { event } = letter;
    const multi = this.store.stageRequeue(this.#redis.multi(), event, this.#now());
    const results = await deadLetters.stageRemove(multi, event.id).exec();
    const first = results?.[0];
    if (first === undefined || first[0] !== null)
      throw first?.[0] ?? new Error('MULTI was discarded');
    const [state, job] = first[1] as [RedriveOutcome, string];
    if (state !== 'delivered') await this.#jobs.add(event.id, queryKeyOf(event), job);
    return state;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
