import { describe, expect, it } from 'vitest';
import type { ConcordanceOutline } from '../concordance/concordance-outline.ts';
import { JobStore } from './job-store.ts';

const outline: ConcordanceOutline = { category: 'CIR007', verdicts: [], flags: [] };

function storeAt(ttlMs = 10_000) {
  const clock = { t: 1_000_000 };
  const store = new JobStore({ now: () => clock.t, ttlMs });
  return { clock, store };
}

describe('JobStore', () => {
  it('moves a job from queued to running to completed on its duration', () => {
    const { clock, store } = storeAt();
    store.add('j', 400, 'completed', outline);
    expect(store.get('j')).toEqual({ status: 'queued' });
    clock.t += 100;
    expect(store.get('j')).toEqual({ status: 'running' });
    clock.t += 299;
    expect(store.get('j').status).toBe('running');
    clock.t += 1;
    expect(store.get('j')).toEqual({ status: 'completed', outline });
  });

  it('completes at once with a zero duration', () => {
    const { store } = storeAt();
    store.add('j', 0, 'completed', outline);
    expect(store.get('j').status).toBe('completed');
  });

  it('ends a failing job as failed, without a result', () => {
    const { clock, store } = storeAt();
    store.add('j', 100, 'failed', outline);
    clock.t += 100;
    expect(store.get('j')).toEqual({ status: 'failed' });
  });

  it('keeps a never-finishing job running past its duration', () => {
    const { clock, store } = storeAt();
    store.add('j', 100, 'never_finish', outline);
    clock.t += 5_000;
    expect(store.get('j')).toEqual({ status: 'running' });
  });

  it('shows a lost job as queued, then not_exists from when it would run, and drops it', () => {
    const { clock, store } = storeAt();
    store.add('j', 400, 'lost', outline);
    expect(store.get('j').status).toBe('queued');
    clock.t += 100;
    expect(store.get('j').status).toBe('not_exists');
    expect(store.size).toBe(0);
  });

  it('reports a job timeline without changing its state', () => {
    const { clock, store } = storeAt();
    store.add('j', 400, 'completed', outline);
    expect(store.timeline('j')).toEqual({
      submittedAt: 1_000_000,
      runningAt: 1_000_100,
      finishAt: 1_000_400,
      outcome: 'completed',
      reads: 0,
      firstFinishedReadAt: null,
    });
    clock.t += 400;
    expect(store.timeline('j')?.finishAt).toBe(1_000_400);
    expect(store.get('j').status).toBe('completed');
    expect(store.timeline('nope')).toBeUndefined();
  });

  it('counts status reads and keeps the time of the first read that found the job finished', () => {
    const { clock, store } = storeAt();
    store.add('done', 400, 'completed', outline);
    store.add('broken', 400, 'failed', outline);
    store.get('done');
    clock.t += 399;
    store.get('done');
    expect(store.timeline('done')).toMatchObject({ reads: 2, firstFinishedReadAt: null });
    clock.t += 5;
    store.get('done');
    store.get('broken');
    clock.t += 100;
    store.get('done');
    expect(store.timeline('done')).toMatchObject({ reads: 4, firstFinishedReadAt: 1_000_404 });
    expect(store.timeline('broken')).toMatchObject({ reads: 1, firstFinishedReadAt: 1_000_404 });
  });

  it('answers not_exists for an unknown id', () => {
    expect(storeAt().store.get('nope')).toEqual({ status: 'not_exists' });
  });

  it('expires a finished job after the TTL and evicts it from memory', () => {
    const { clock, store } = storeAt(1000);
    store.add('read-later', 100, 'completed', outline);
    store.add('never-read', 100, 'completed', outline);
    clock.t += 100 + 999;
    expect(store.get('read-later').status).toBe('completed');
    clock.t += 1;
    expect(store.get('read-later').status).toBe('not_exists');
    expect(store.size).toBe(1);
    // The next sweep (at most a second later) removes the job nobody asked for again.
    clock.t += 1000;
    expect(store.get('any').status).toBe('not_exists');
    expect(store.size).toBe(0);
  });

  it('sweeps expired jobs when new ones arrive', () => {
    const { clock, store } = storeAt(50);
    for (let i = 0; i < 100; i++) store.add(`old-${i}`, 0, 'completed', outline);
    clock.t += 1000;
    store.add('new', 0, 'completed', outline);
    expect(store.size).toBe(1);
  });
});
