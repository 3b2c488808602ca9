import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeEvent } from '../../test/integration/delivery/delivery-fixture.ts';
import { newOutboundKey } from '../../test/support/outbound.ts';
import { isolatedRedis } from '../../test/support/redis.ts';
import { FeedMetrics } from '../observability/feed-metrics.ts';
import { deliveryTraceKey } from '../trace/trace-keys.ts';
import { ChangeDetector } from './change-detector.ts';
import { DeliveryRouter } from './delivery-router.ts';
import { OutboundQueueChannel } from './outbound-queue-channel.ts';

const TTL_S = 7 * 86_400;

/**
 * The router's part of the delivery trace (docs/message-trace.md): the change-only hold notes
 * `unchanged_at` in the change check's script, the outbound queue notes `outbound_at` once it took
 * the events, and a result it took counts `delivered` by the feed its delivery trace names.
 */
describe('the delivery trace of the router and the outbound queue (real Redis, real queue)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let channel: OutboundQueueChannel;
  let registry: Registry;
  const clock = 1_800_000_000_000;

  beforeEach(async () => {
    env = await isolatedRedis();
    registry = new Registry();
  });
  afterEach(async () => {
    await channel.close();
    await env.cleanup();
  });

  function router(ttl: number, onlyChanged = true): DeliveryRouter {
    channel = new OutboundQueueChannel({
      connection: env.redis,
      prefix: env.prefix,
      name: 'concordance-results',
      retention: { count: 100, age_s: 3_600, waiting_age_s: 7 * 86_400 },
      key: newOutboundKey(),
      trace: { prefix: env.prefix, ttlS: ttl },
      now: () => clock,
    });
    return new DeliveryRouter({
      channels: [channel],
      changes: new ChangeDetector({
        redis: env.redis,
        prefix: env.prefix,
        ignoreFields: [],
        holdTraceTtlS: onlyChanged ? ttl : 0,
        now: () => clock,
      }),
      onlyChanged,
      logger: pino({ level: 'silent' }),
      feeds: new FeedMetrics(registry),
      now: () => clock,
    });
  }

  const traceOf = (id: string) => env.redis.hgetall(deliveryTraceKey(env.prefix, id));
  async function counted(): Promise<unknown[]> {
    const metric = registry.getSingleMetric('cw_feed_messages_total');
    return (await metric?.get())?.values.map((v) => [v.labels, v.value]) ?? [];
  }

  it('notes the hand-over to the outbound queue and a held-back unchanged result; counts delivered by feed', async () => {
    const r = router(TTL_S);
    const first = makeEvent();
    const same = makeEvent({ concordance: first.concordance });
    await env.redis.hset(deliveryTraceKey(env.prefix, first.id), 'feed', 'json');
    await env.redis.hset(deliveryTraceKey(env.prefix, same.id), 'feed', 'json');

    await r.deliverMany([first]);
    expect(await traceOf(first.id)).toEqual({ feed: 'json', outbound_at: String(clock) });
    expect(await env.redis.ttl(deliveryTraceKey(env.prefix, first.id))).toBeGreaterThan(TTL_S - 60);
    // The same result again: held back (only_changed), not handed over.
    await r.deliverMany([same]);
    expect(await traceOf(same.id)).toEqual({ feed: 'json', unchanged_at: String(clock) });
    expect(await channel.queue.getJobCounts('wait')).toEqual({ wait: 1 });
    expect(await counted()).toEqual([[{ feed: 'json', stage: 'delivered' }, 1]]);
  });

  it('without only_changed an unchanged result is handed over, and no hold is noted', async () => {
    const r = router(TTL_S, false);
    const first = makeEvent();
    const same = makeEvent({ concordance: first.concordance });
    await r.deliverMany([first, same]);
    expect(await traceOf(same.id)).toEqual({ outbound_at: String(clock) });
    // No feed in their traces (their queries had none): not counted.
    expect(await counted()).toEqual([]);
  });

  it('with the trace off, nothing is written', async () => {
    const r = router(0);
    const first = makeEvent();
    await r.deliverMany([first, makeEvent({ concordance: first.concordance })]);
    expect(await channel.queue.getJobCounts('wait')).toEqual({ wait: 1 });
    expect(await env.redis.keys(`${env.prefix}:trace:*`)).toEqual([]);
  });
});
