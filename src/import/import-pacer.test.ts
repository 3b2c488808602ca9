import { describe, expect, it } from 'vitest';
import { ImportPacer } from './import-pacer.ts';

/** A backlog that reads as the next value of `values` (the last one repeated). */
function backlogOf(values: number[]) {
  let reads = 0;
  return {
    read: async () => values[Math.min(reads++, values.length - 1)] ?? 0,
    get reads() {
      return reads;
    },
  };
}

describe('ImportPacer', () => {
  it('lets a patient through at once while the backlog is under the share', async () => {
    const backlog = backlogOf([0]);
    const pacer = new ImportPacer({ backlog: backlog.read, maxWaiting: 3, pollMs: 0 });
    await pacer.ready();
    expect(pacer.waits).toBe(0);
  });

  it('holds a patient until the backlog drains below the share, telling once', async () => {
    const backlog = backlogOf([5, 4, 3, 1]);
    const told: number[] = [];
    const pacer = new ImportPacer({
      backlog: backlog.read,
      maxWaiting: 3,
      pollMs: 0,
      onWait: (n) => told.push(n),
    });
    await pacer.ready();
    expect(backlog.reads).toBe(4);
    expect(pacer.waits).toBe(1);
    expect(told).toEqual([5]);
  });

  it('counts what it let through between two reads of the backlog', async () => {
    const backlog = backlogOf([0]);
    let now = 0;
    const pacer = new ImportPacer({
      backlog: backlog.read,
      maxWaiting: 2,
      pollMs: 1000,
      now: () => now,
    });
    await pacer.ready();
    await pacer.ready();
    expect(backlog.reads).toBe(1);
    // Two let through since the read: the third waits for a fresh read, which finds room.
    now = 1000;
    await pacer.ready();
    expect(backlog.reads).toBe(2);
    expect(pacer.waits).toBe(0);
  });

  it('counts the queries each patient opened until the next read of the backlog', async () => {
    const backlog = backlogOf([0, 1]);
    let now = 0;
    const pacer = new ImportPacer({
      backlog: backlog.read,
      maxWaiting: 5,
      pollMs: 1000,
      now: () => now,
      wait: async (ms) => {
        now += ms;
      },
    });
    await pacer.ready();
    pacer.opened(4);
    // 4 counted (< 5): the next patient goes through on the same read, and opens 3 more.
    await pacer.ready();
    pacer.opened(3);
    expect(backlog.reads).toBe(1);
    expect(pacer.waits).toBe(0);
    // 7 counted: the next patient waits for a fresh read (1: the workers took the rest).
    await pacer.ready();
    expect(backlog.reads).toBe(2);
    expect(pacer.waits).toBe(1);
  });

  it('never waits when pacing is off', async () => {
    const backlog = backlogOf([1_000_000]);
    const pacer = new ImportPacer({ backlog: backlog.read, maxWaiting: 0 });
    await pacer.ready();
    expect(backlog.reads).toBe(0);
  });
});
