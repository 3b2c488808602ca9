import { DelayedError } from 'bullmq';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ResultEvent } from '../src/interface/result-event.ts';
import { FeedMetrics } from '../src/observability/feed-metrics.ts';
import { deliveryTraceKey } from '../src/trace/trace-keys.ts';
import { makeEvent } from '../test/integration/delivery/delivery-fixture.ts';
import { WebhookJobRig } from '../test/support/webhook-job-rig.ts';
import {
  webhookDeliveryProcessor,
  type WebhookDeliveryParts,
  type WebhookJobResult,
} from './webhook-deliveries.ts';

const TTL_S = 7 * 86_400;
const FEED = 'fhir';

/**
 * The webhook's scripts write each attempt, its answer and the end into the event's delivery
 * trace (docs/message-trace.md); the end gives the feed of the event's query, counted `delivered`.
 * Real BullMQ jobs, real Redis, a real receiver, as in webhook-deliveries.test.ts.
 */
describe('the delivery trace of the webhook (real jobs, Redis and receiver)', () => {
  let rig: WebhookJobRig;
  let env: WebhookJobRig['env'];
  let statuses: number[];
  let registry: Registry;
  let clock: number;

  beforeEach(async () => {
    statuses = [];
    rig = await WebhookJobRig.start(() => statuses.shift() ?? 204);
    env = rig.env;
    registry = new Registry();
    clock = Date.now();
  });
  afterEach(() => rig.close());

  const parts = (ttl: number): WebhookDeliveryParts =>
    rig.parts({ traceTtlS: ttl, feeds: new FeedMetrics(registry), now: () => clock });
  const handOver = (p: WebhookDeliveryParts, event: ResultEvent) => rig.handOver(p, event, clock);

  /** Takes the next waiting job as the worker would, and runs it. */
  async function runNext(p: WebhookDeliveryParts): Promise<WebhookJobResult | Error> {
    const { job, token } = await rig.next();
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
