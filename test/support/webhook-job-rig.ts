import { randomUUID } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import pino from 'pino';
import { DeadLetterStore } from '../../src/delivery/dead-letter-store.ts';
import { WebhookClient } from '../../src/delivery/webhook-client.ts';
import {
  WEBHOOK_DELIVERIES,
  type WebhookJobData,
} from '../../src/delivery/webhook-deliveries-queue.ts';
import { WebhookDeliveryJobs } from '../../src/delivery/webhook-delivery-jobs.ts';
import { queryKeyOf, WebhookDeliveryStore } from '../../src/delivery/webhook-delivery-store.ts';
import { WebhookSigner } from '../../src/delivery/webhook-signer.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../../src/identity/crosswalk-keys.ts';
import type { ResultEvent } from '../../src/interface/result-event.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../tools/webhook-receiver.ts';
import type { WebhookDeliveryParts, WebhookJobResult } from '../../workers/webhook-deliveries.ts';
import { newSecret } from '../integration/delivery/delivery-fixture.ts';
import { isolatedRedis } from './redis.ts';

export type WebhookJob = Job<WebhookJobData, WebhookJobResult>;

/** What a test chooses of a processor's parts; the rest is the rig's. */
export type RigParts = Pick<WebhookDeliveryParts, 'now'> &
  Partial<Pick<WebhookDeliveryParts, 'logger' | 'feeds' | 'spans'>> & {
    /** The delivery trace's TTL in seconds (0: no trace). */
    traceTtlS: number;
  };

/**
 * The webhook delivery processor's surroundings for a unit test: Redis under a prefix of its own,
 * a real receiver answering `respond()`, the delivery queue and a worker that does not run (the
 * test takes each job), and one crosswalk key for the stores.
 */
export class WebhookJobRig {
  readonly env: Awaited<ReturnType<typeof isolatedRedis>>;
  readonly secret: string;
  readonly receiver: WebhookReceiver;
  readonly queue: Queue<WebhookJobData>;
  readonly worker: Worker<WebhookJobData, WebhookJobResult>;
  readonly #keys = deriveCrosswalkKeys(generateCrosswalkSecret());

  private constructor(
    env: Awaited<ReturnType<typeof isolatedRedis>>,
    secret: string,
    receiver: WebhookReceiver,
  ) {
    this.env = env;
    this.secret = secret;
    this.receiver = receiver;
    const connection = { connection: env.redis, prefix: env.prefix };
    this.queue = new Queue(WEBHOOK_DELIVERIES, connection);
    this.worker = new Worker(WEBHOOK_DELIVERIES, null, { ...connection, autorun: false });
  }

  static async start(respond: () => number): Promise<WebhookJobRig> {
    const env = await isolatedRedis();
    const secret = newSecret();
    return new WebhookJobRig(env, secret, await startWebhookReceiver({ secret, respond }));
  }

  /** The processor's parts on the rig: backoff 60 s to 1 h without jitter, max age 2 min. */
  parts(chosen: RigParts): WebhookDeliveryParts {
    const { redis, prefix } = this.env;
    const store = new WebhookDeliveryStore({
      redis,
      prefix,
      keys: this.#keys,
      traceTtlS: chosen.traceTtlS,
    });
    return {
      store,
      jobs: new WebhookDeliveryJobs(this.queue, store),
      client: new WebhookClient({ url: this.receiver.url }),
      signer: new WebhookSigner(this.secret),
      deadLetters: new DeadLetterStore({ redis, prefix, keys: this.#keys }),
      logger: chosen.logger ?? pino({ level: 'silent' }),
      feeds: chosen.feeds,
      maxAgeMs: 120_000,
      backoff: { firstDelayMs: 60_000, maxDelayMs: 3_600_000, jitter: 0 },
      parkMs: 300_000,
      now: chosen.now,
      random: () => 0.5,
      spans: chosen.spans,
    };
  }

  /** Hands `event` over at `at`, as the poller does: stored, and its job added. */
  async handOver(p: WebhookDeliveryParts, event: ResultEvent, at: number): Promise<void> {
    const { job } = await p.store.enqueue(event, at);
    await p.jobs.add(event.id, queryKeyOf(event), job);
  }

  /** The next waiting job, taken as the worker would, with its lock token. */
  async next(): Promise<{ job: WebhookJob; token: string }> {
    const token = randomUUID();
    const job = (await this.worker.getNextJob(token, { block: false })) as WebhookJob;
    return { job, token };
  }

  async close(): Promise<void> {
    await this.worker.close(true);
    await this.queue.close();
    await this.receiver.close();
    await this.env.cleanup();
  }
}
