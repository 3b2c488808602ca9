import { randomUUID } from 'node:crypto';
import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeadLetterStore } from '../src/delivery/dead-letter-store.ts';
import { WebhookClient } from '../src/delivery/webhook-client.ts';
import {
  WEBHOOK_DELIVERIES,
  type WebhookJobData,
} from '../src/delivery/webhook-deliveries-queue.ts';
import { WebhookDeliveryJobs } from '../src/delivery/webhook-delivery-jobs.ts';
import { queryKeyOf, WebhookDeliveryStore } from '../src/delivery/webhook-delivery-store.ts';
import { WebhookSigner } from '../src/delivery/webhook-signer.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../src/identity/crosswalk-keys.ts';
import type { ResultEvent } from '../src/interface/result-event.ts';
import { FeedMetrics } from '../src/observability/feed-metrics.ts';
import { deliveryTraceKey } from '../src/trace/trace-keys.ts';
import { makeEvent, newSecret } from '../test/integration/delivery/delivery-fixture.ts';
import { isolatedRedis } from '../test/support/redis.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../tools/webhook-receiver.ts';
import {
  webhookDeliveryProcessor,
  type WebhookDeliveryParts,
  type WebhookJobResult,
} from './webhook-deliveries.ts';

type WebhookJob = Job<WebhookJobData, WebhookJobResult>;
const TTL_S = 7 * 86_400;
const FEED = 'fhir';

/**
 * The webhook's scripts write each attempt, its answer and the end into the event's delivery
 * trace (docs/message-trace.md); the end gives the feed of the event's query, counted `delivered`.
 * Real BullMQ jobs, real Redis, a real receiver, as in webhook-deliveries.test.ts.
 */
describe('the delivery trace of the webhook (real jobs, Redis and receiver)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let receiver: WebhookReceiver;
  let statuses: number[];
  let queue: Queue<WebhookJobData>;
  let worker: Worker<WebhookJobData, WebhookJobResult>;
  let registry: Registry;
  let secret: string;
  let clock: number;

  beforeEach(async () => {
    env = await isolatedRedis();
    secret = newSecret();
    statuses = [];
    receiver = await startWebhookReceiver({ secret, respond: () => statuses.shift() ?? 204 });
    queue = new Queue(WEBHOOK_DELIVERIES, { connection: env.redis, prefix: env.prefix });
    worker = new Worker(WEBHOOK_DELIVERIES, null, {
      connection: env.redis,
      prefix: env.prefix,
      autorun: false,
    });
    registry = new Registry();
    clock = Date.now();
  });
  afterEach(async () => {
    await worker.close(true);
    await queue.close();
    await receiver.close();
    await env.cleanup();
  });

  function parts(ttl: number): WebhookDeliveryParts {
    const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
    const store = new WebhookDeliveryStore({
      redis: env.redis,
      prefix: env.prefix,
      keys,
      traceTtlS: ttl,
    });
    return {
      store,
      jobs: new WebhookDeliveryJobs(queue, store),
      client: new WebhookClient({ url: receiver.url }),
      signer: new WebhookSigner(secret),
      deadLetters: new DeadLetterStore({ redis: env.redis, prefix: env.prefix, keys }),
      logger: pino({ level: 'silent' }),
      feeds: new FeedMetrics(registry),
      maxAgeMs: 120_000,
      backoff: { firstDelayMs: 60_000, maxDelayMs: 3_600_000, jitter: 0 },
      parkMs: 300_000,
      now: () => clock,
      random: () => 0.5,
    };
  }

  async function handOver(p: WebhookDeliveryParts, event: ResultEvent): Promise<void> {
    const { job } = await p.store.enqueue(event, clock);
    await p.jobs.add(event.id, queryKeyOf(event), job);
  }

  /** Takes the next waiting job as the worker would, and runs it. */
  async function runNext(p: WebhookDeliveryParts): Promise<WebhookJobResult | Error> {
    const token = randomUUID();
    const job = (await worker.getNextJob(token, { block: false })) as WebhookJob;
    return webhookDeliveryProcessor(p)(job, token).catch(async (err: unknown) => {
      // A retry waits out its backoff: brought forward, as the test does not wait.
      if (err instanceof DelayedError) await job.promote();
      return err as Error;
    });
  }

  const traceOf = (event: ResultEvent) => env.redis.hgetall(deliveryTraceKey(env.prefix, event.id));

  async function delivered(): Promise<unknown[]> {
    const metric = registry.getSingleMetric('cw_feed_messages_total');
    return (await metric?.get())?.values.map((v) => [v.labels, v.value]) ?? [];
  }

  it('notes each attempt, the last answer and the end, and counts the feed delivered', async () => {
    const p = parts(TTL_S);
    const event = makeEvent();
    // What the query's scripts copied into the event's trace.
    await env.redis.hset(deliveryTraceKey(env.prefix, event.id), 'feed', FEED);
    await handOver(p, event);
    statuses.push(503);
    const first = clock;
    expect(await runNext(p)).toBeInstanceOf(DelayedError);
    expect(await traceOf(event)).toEqual({
      feed: FEED,
      webhook_attempts: '1',
      webhook_first_at: String(first),
      webhook_last_at: String(first),
      webhook_last_answer: '503',
    });
    expect(await delivered()).toEqual([]);

    clock += 60_000;
    expect(await runNext(p)).toEqual({ outcome: 'delivered', status: 204, attempt: 2 });
    expect(await traceOf(event)).toEqual({
      feed: FEED,
      webhook_attempts: '2',
      webhook_first_at: String(first),
      webhook_last_at: String(clock),
      webhook_last_answer: '204',
      webhook_state: 'delivered',
      webhook_ended_at: String(clock),
    });
    expect(await env.redis.ttl(deliveryTraceKey(env.prefix, event.id))).toBeGreaterThan(TTL_S - 60);
    expect(await delivered()).toEqual([[{ feed: FEED, stage: 'delivered' }, 1]]);
  });

  it('a dead-lettered event ends dead with its answer, and is not counted delivered', async () => {
    const p = parts(TTL_S);
    const event = makeEvent();
    await env.redis.hset(deliveryTraceKey(env.prefix, event.id), 'feed', FEED);
    await handOver(p, event);
    statuses.push(410);
    expect(await runNext(p)).toMatchObject({ outcome: 'dead_lettered' });
    expect(await traceOf(event)).toMatchObject({
      webhook_attempts: '1',
      webhook_last_answer: '410',
      webhook_state: 'dead',
      webhook_ended_at: String(clock),
    });
    expect(await delivered()).toEqual([]);
  });

  it('with the trace off, nothing is written', async () => {
    const p = parts(0);
    const event = makeEvent();
    await handOver(p, event);
    statuses.push(500);
    expect(await runNext(p)).toBeInstanceOf(DelayedError);
    clock += 60_000;
    expect(await runNext(p)).toMatchObject({ outcome: 'delivered' });
    expect(await env.redis.keys(`${env.prefix}:trace:*`)).toEqual([]);
    expect(await delivered()).toEqual([]);
  });
});
