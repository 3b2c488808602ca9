import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { closeWorker } from '../../../src/runtime/close-worker.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { TcpProxy } from '../../../tools/tcp-proxy.ts';

/**
 * closeWorker() against the BullMQ close that never ends while the worker's blocking connection
 * waits between reconnect attempts (scripts/repro/bullmq-close-while-reconnecting.ts).
 */
/** The next `event` (unlike events.once, an `error` in between does not reject). */
const next = (emitter: { once(event: string, listener: () => void): unknown }, event: string) =>
  new Promise<void>((resolve) => emitter.once(event, () => resolve()));

describe('closeWorker', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setUp() {
    const env = await isolatedRedis();
    const proxy = await TcpProxy.start(testRedisUrl());
    const connection = new Redis(proxy.redisUrl, { maxRetriesPerRequest: null });
    connection.on('error', () => undefined);
    const processed: string[] = [];
    let release: (() => void) | undefined;
    const worker = new Worker(
      'close-test',
      async (job) => {
        if (job.data.hold === true) await new Promise<void>((r) => (release = r));
        processed.push(String(job.id));
      },
      { connection, prefix: env.prefix },
    );
    worker.on('error', () => undefined);
    await worker.waitUntilReady();
    const queue = new Queue('close-test', { connection: env.redis, prefix: env.prefix });
    cleanups.push(
      () => env.cleanup(),
      () => proxy.close(),
      async () => connection.disconnect(),
      () => queue.close(),
    );
    const blocking = (await worker.backend.blockingClient) as unknown as Redis;
    return { worker, queue, proxy, blocking, processed, release: () => release?.() };
  }

  it('closes gracefully once the blocking connection is back, after the active job finished', async () => {
    const { worker, queue, proxy, blocking, processed, release } = await setUp();
    await queue.add('held', { hold: true }, { jobId: 'held' });
    await next(worker, 'active');
    await proxy.refuse();
    await next(blocking, 'reconnecting');
    const closing = closeWorker(worker, 20_000);
    await proxy.forward();
    release();
    expect(await closing).toBe('closed');
    expect(processed).toEqual(['held']);
    expect(await (await queue.getJob('held'))?.getState()).toBe('completed');
  });

  it('closes with force when Redis stays away, leaving the active job to come back', async () => {
    const { worker, queue, proxy, blocking } = await setUp();
    await queue.add('held', { hold: true }, { jobId: 'held' });
    await next(worker, 'active');
    await proxy.refuse();
    await next(blocking, 'reconnecting');
    expect(await closeWorker(worker, 2_000)).toBe('forced');
    expect(worker.closing).toBeDefined();
    // Nothing was lost: the job is still active in Redis (its lock expires, then it comes back).
    expect(await (await queue.getJob('held'))?.getState()).toBe('active');
  });
});
