import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '../../tools/local-redis.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { isolatedRedis } from '../../test/support/redis.ts';
import { AuthPause } from '../queues/auth-pause.ts';
import { redisAnswers } from '../queues/redis-connections.ts';
import { PipelineMetrics, QUEUE_JOB_STATES } from './pipeline-metrics.ts';

type Isolated = Awaited<ReturnType<typeof isolatedRedis>>;

async function gauge(registry: Registry): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric('cw_queue_jobs');
  if (metric === undefined) throw new Error('cw_queue_jobs is not registered');
  const { values } = await metric.get();
  return Object.fromEntries(values.map((v) => [`${v.labels.queue}/${v.labels.state}`, v.value]));
}

/** A gauge's series by its `queue` label (`''` for a gauge without labels). */
async function byQueue(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`${name} is not registered`);
  const { values } = await metric.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.queue ?? ''), v.value]));
}

describe('PipelineMetrics', () => {
  let redis: Isolated;
  const closers: (() => Promise<unknown>)[] = [];

  beforeEach(async () => {
    redis = await isolatedRedis();
  });

  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    await redis.cleanup();
  });

  const queue = (name: string, connection: RedisClient = redis.redis) => {
    const q = new Queue(name, { connection, prefix: redis.prefix });
    closers.unshift(() => q.close());
    return q;
  };

  /** A connection to a port where no Redis listens (closed after the test). */
  const unreachableRedis = async () => {
    const unreachable = new Redis(`redis://127.0.0.1:${await freePort()}`, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      lazyConnect: true,
    });
    unreachable.on('error', () => undefined);
    closers.push(async () => unreachable.disconnect());
    return unreachable;
  };

  /** A queue on {@link unreachableRedis}: its counts never come. */
  const deadQueue = async () => {
    const dead = new Queue('dead-queue', {
      connection: await unreachableRedis(),
      prefix: redis.prefix,
    });
    dead.on('error', () => undefined);
    closers.unshift(() => dead.close().catch(() => undefined));
    return dead;
  };

  it('reads cw_queue_jobs from Redis on every scrape, for each watched queue and every state', async () => {
    const registry = new Registry();
    const metrics = new PipelineMetrics(registry);
    const queries = queue('concordance-queries');
    const results = queue('concordance-results');
    metrics.watchQueues(queries, results);

    await queries.add('q', {});
    await queries.add('q', {}, { delay: 60_000 });
    await results.add('r', {});
    let values = await gauge(registry);
    expect(Object.keys(values)).toHaveLength(2 * QUEUE_JOB_STATES.length);
    expect(values).toMatchObject({
      'concordance-queries/waiting': 1,
      'concordance-queries/delayed': 1,
      'concordance-queries/active': 0,
      'concordance-results/waiting': 1,
      'concordance-results/delayed': 0,
    });

    // Another scrape sees what changed in between.
    await queries.add('q', {});
    values = await gauge(registry);
    expect(values['concordance-queries/waiting']).toBe(2);
  });

  it('shares the gauge between two roles on one registry, one series set per queue name, until unwatched', async () => {
    const registry = new Registry();
    const ingest = new PipelineMetrics(registry);
    const work = new PipelineMetrics(registry);
    expect(work.queueJobs).toBe(ingest.queueJobs);
    const fromIngest = queue('concordance-queries');
    const fromWorker = queue('concordance-queries');
    const results = queue('concordance-results');
    const unwatchIngest = ingest.watchQueues(fromIngest);
    const unwatchWork = work.watchQueues(fromWorker, results);
    await fromIngest.add('q', {});

    const both = await gauge(registry);
    expect(Object.keys(both)).toHaveLength(2 * QUEUE_JOB_STATES.length);
    expect(both['concordance-queries/waiting']).toBe(1);

    unwatchIngest();
    expect((await gauge(registry))['concordance-queries/waiting']).toBe(1);
    unwatchWork();
    expect(await gauge(registry)).toEqual({});
  });

  it('leaves out a queue whose Redis does not answer, and still reports the others', async () => {
    const registry = new Registry();
    const metrics = new PipelineMetrics(registry);
    const dead = await deadQueue();
    metrics.watchQueues(dead, queue('concordance-results'));

    const values = await gauge(registry);
    expect(Object.keys(values).some((key) => key.startsWith('dead-queue/'))).toBe(false);
    expect(values['concordance-results/waiting']).toBe(0);
  });

  it('counts service attempts by endpoint and status and observes their duration in seconds', async () => {
    const registry = new Registry();
    const metrics = new PipelineMetrics(registry);
    metrics.observeServiceResponse({
      endpoint: 'POST /v1/concordance',
      status: 202,
      durationMs: 1_500,
    });
    metrics.observeServiceResponse({
      endpoint: 'GET /v1/concordance/{job_id}',
      status: 'timeout',
      durationMs: 10,
    });
    const requests = await metrics.serviceRequests.get();
    expect(requests.values.map((v) => [v.labels, v.value])).toEqual([
      [{ endpoint: 'POST /v1/concordance', status: '202' }, 1],
      [{ endpoint: 'GET /v1/concordance/{job_id}', status: 'timeout' }, 1],
    ]);
    const durations = await metrics.serviceDuration.get();
    const sum = durations.values.find(
      (v) =>
        v.metricName === 'cw_service_request_duration_seconds_sum' &&
        v.labels.endpoint === 'POST /v1/concordance',
    );
    expect(sum?.value).toBe(1.5);
  });

  it('reads cw_queue_oldest_waiting_seconds from the wait list on every scrape: 0 when none waits', async () => {
    const registry = new Registry();
    const metrics = new PipelineMetrics(registry);
    const queries = queue('concordance-queries');
    const results = queue('concordance-results');
    metrics.watchQueues(queries, results);
    expect(await byQueue(registry, 'cw_queue_oldest_waiting_seconds')).toEqual({
      'concordance-queries': 0,
      'concordance-results': 0,
    });

    // Created two minutes ago (BullMQ keeps the creation time), then a newer one; a delayed job
    // does not wait for a worker yet and is not counted.
    const created = Date.now() - 120_000;
    await queries.add('q', {}, { timestamp: created });
    await queries.add('q', {});
    await results.add('r', {}, { delay: 600_000, timestamp: created - 60_000 });
    const before = Date.now();
    const values = await byQueue(registry, 'cw_queue_oldest_waiting_seconds');
    const after = Date.now();
    expect(values['concordance-queries']).toBeGreaterThanOrEqual((before - created) / 1_000);
    expect(values['concordance-queries']).toBeLessThanOrEqual((after - created) / 1_000);
    expect(values['concordance-results']).toBe(0);
  });

  it('leaves a queue whose Redis does not answer out of cw_queue_oldest_waiting_seconds', async () => {
    const registry = new Registry();
    const metrics = new PipelineMetrics(registry);
    const dead = await deadQueue();
    metrics.watchQueues(dead, queue('concordance-results'));
    expect(await byQueue(registry, 'cw_queue_oldest_waiting_seconds')).toEqual({
      'concordance-results': 0,
    });
  });

  it('reports cw_queue_auth_paused from the auth-pause flag on every scrape, until unwatched', async () => {
    const registry = new Registry();
    const ingest = new PipelineMetrics(registry);
    const work = new PipelineMetrics(registry);
    const queries = queue('concordance-queries');
    const pause = new AuthPause(queries, redis.redis, redis.prefix);
    const unwatchA = ingest.watchAuthPause(queries.name, () => pause.isPaused());
    const unwatchB = work.watchAuthPause(queries.name, () => pause.isPaused());
    expect(await byQueue(registry, 'cw_queue_auth_paused')).toEqual({ 'concordance-queries': 0 });

    expect(await pause.pause('ERR_SERVICE_AUTH')).toBe(true);
    expect(await byQueue(registry, 'cw_queue_auth_paused')).toEqual({ 'concordance-queries': 1 });
    // An operator's own pause is not the auth pause.
    expect(await pause.resumeIfPaused()).toBe(true);
    await queries.pause();
    expect(await byQueue(registry, 'cw_queue_auth_paused')).toEqual({ 'concordance-queries': 0 });

    unwatchA();
    unwatchB();
    expect(await byQueue(registry, 'cw_queue_auth_paused')).toEqual({});
  });

  it('reports cw_redis_up: 1 when every watched connection answers a PING, 0 when one does not', async () => {
    const registry = new Registry();
    const ingest = new PipelineMetrics(registry);
    const work = new PipelineMetrics(registry);
    const unwatchLive = ingest.watchRedis(() => redisAnswers(redis.redis));
    expect(await byQueue(registry, 'cw_redis_up')).toEqual({ '': 1 });

    const unreachable = await unreachableRedis();
    const unwatchDead = work.watchRedis(() => redisAnswers(unreachable, 200));
    expect(await byQueue(registry, 'cw_redis_up')).toEqual({ '': 0 });
    // A probe that throws counts as down too.
    unwatchDead();
    const unwatchThrowing = work.watchRedis(() => Promise.reject(new Error('no connection')));
    expect(await byQueue(registry, 'cw_redis_up')).toEqual({ '': 0 });
    unwatchThrowing();
    expect(await byQueue(registry, 'cw_redis_up')).toEqual({ '': 1 });
    unwatchLive();
  });
});
