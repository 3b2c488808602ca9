import { Queue, Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { worseOutcome, WorkerRegistry } from './worker-registry.ts';
import type { WorkerCloseOutcome } from './close-worker.ts';

describe('worseOutcome', () => {
  it('ranks abandoned over forced over closed, whichever side it is on', () => {
    expect(worseOutcome('closed', 'closed')).toBe('closed');
    expect(worseOutcome('closed', 'forced')).toBe('forced');
    expect(worseOutcome('forced', 'closed')).toBe('forced');
    expect(worseOutcome('forced', 'abandoned')).toBe('abandoned');
    expect(worseOutcome('abandoned', 'closed')).toBe('abandoned');
  });
});

describe('WorkerRegistry.close (real BullMQ workers, real Redis)', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('a worker that closed gracefully does not hide what beside it had to leave work in flight', async () => {
    const { redis: connection, prefix, cleanup } = await isolatedRedis();
    cleanups.push(cleanup);
    const outcomes: [string, WorkerCloseOutcome][] = [];
    const registry = new WorkerRegistry(10_000, (queue, outcome) =>
      outcomes.push([queue, outcome]),
    );
    for (const [name, clean] of [
      ['left-work', false],
      ['clean-work', true],
    ] as const) {
      const queue = new Queue(name, { connection, prefix });
      const worker = new Worker(name, async () => undefined, { connection, prefix });
      await worker.waitUntilReady();
      cleanups.push(async () => {
        await worker.close(true);
        await queue.close();
      });
      // Redis answers, so the BullMQ worker closes gracefully; `stop` says how its relay ended.
      registry.add({ name, queue, worker, stop: () => Promise.resolve(clean) });
    }
    await registry.close();
    expect(outcomes.sort()).toEqual([
      ['clean-work', 'closed'],
      ['left-work', 'forced'],
    ]);
  });
});
