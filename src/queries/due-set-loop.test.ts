import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { DueSetLoop } from './due-set-loop.ts';

/** A due set of `due` numbered entries; each batch's run waits until the test releases it. */
function fixture(due: number, options: { batch: number; concurrency: number }) {
  let next = 0;
  const takes: number[] = [];
  const running: { taken: number[]; release: () => void }[] = [];
  const waiters: (() => void)[] = [];
  class Numbers extends DueSetLoop<number> {
    constructor() {
      super(
        { logger: pino({ level: 'silent' }) },
        // An hour: every take after the first one below comes from the loop's own wake-ups.
        { interval_ms: 3_600_000, ...options },
        { failing: 'failing', recovered: 'recovered' },
      );
    }

    protected async take(limit: number): Promise<number[]> {
      takes.push(limit);
      return Array.from({ length: Math.min(limit, due - next) }, () => next++);
    }

    protected run(taken: number[]): Promise<void> {
      return new Promise<void>((release) => {
        running.push({ taken, release });
        for (const wake of waiters.splice(0)) wake();
      });
    }
  }
  const loop = new Numbers();
  const untilRunning = async (count: number) => {
    while (running.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  return { loop, takes, running, untilRunning };
}

describe('DueSetLoop', () => {
  it('takes again at once while a take gets all it asked for and slots are free', async () => {
    const { loop, running, untilRunning } = fixture(7, { batch: 3, concurrency: 100 });
    loop.start();
    await untilRunning(3);
    expect(running.map((r) => r.taken)).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    for (const r of running) r.release();
    expect(await loop.close(1_000)).toBe(true);
  });

  it('never has more than `concurrency` in flight, and takes at once when a batch ends while more was due', async () => {
    const { loop, takes, running, untilRunning } = fixture(10, { batch: 4, concurrency: 5 });
    loop.start();
    // 4, then the one free slot: full, so more may be due; then no slot is free.
    await untilRunning(2);
    expect(running.map((r) => r.taken)).toEqual([[0, 1, 2, 3], [4]]);
    expect(loop.inFlight).toBe(5);
    expect(takes).toEqual([4, 1]);
    // The first batch ends: its four slots are used again at once (no interval passes).
    running[0]?.release();
    await untilRunning(3);
    expect(running[2]?.taken).toEqual([5, 6, 7, 8]);
    running[1]?.release();
    await untilRunning(4);
    expect(running[3]?.taken).toEqual([9]);
    for (const r of running.slice(2)) r.release();
    expect(await loop.close(1_000)).toBe(true);
    expect(loop.inFlight).toBe(0);
  });

  it('close() says false when work is still out after the grace period', async () => {
    const { loop, running, untilRunning } = fixture(1, { batch: 1, concurrency: 1 });
    loop.start();
    await untilRunning(1);
    expect(await loop.close(10)).toBe(false);
    running[0]?.release();
    await loop.settled();
  });
});
