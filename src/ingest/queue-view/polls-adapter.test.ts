import type { BaseAdapter } from '@bull-board/api/dist/queueAdapters/base.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../../test/support/redis.ts';
import { PollListing } from '../../queries/poll-listing.ts';
import { pollSetKey } from '../../queries/poll-set.ts';
import { QueryState } from '../../queries/query-state.ts';
import { ReadOnlyError } from '../errors/read-only-error.ts';
import { PollsAdapter, QUERY_POLLS } from './polls-adapter.ts';

/** The random service ids of the patients: the view must not show them. */
const PSID = 'psid-never-in-the-view';
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const SUBMITTED_AT = NOW - 90_000;

describe('PollsAdapter (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let adapter: PollsAdapter;

  beforeEach(async () => {
    env = await isolatedRedis();
    const state = new QueryState({ redis: env.redis, prefix: env.prefix });
    // Two queries submitted the real way: one due a second ago, one due in a minute.
    const queries = [
      { psid: `${PSID}-1`, category: 'END002', job: 'remote-due', at: NOW - 1_000 },
      { psid: `${PSID}-2`, category: 'CIR007', job: 'remote-later', at: NOW + 60_000 },
    ];
    for (const { psid, category, job, at } of queries) {
      const { seq } = await state.schedule(
        psid,
        category,
        { eventId: `ev-${job}`, at: new Date(SUBMITTED_AT).toISOString() },
        0,
      );
      await state.claim(psid, category, seq);
      await state.markSubmitted(
        psid,
        category,
        seq,
        { remoteJobId: job, submittedAt: SUBMITTED_AT, resubmits: 0, recordVersion: 1, polls: 2 },
        at,
      );
    }
    adapter = new PollsAdapter({
      listing: new PollListing({ redis: env.redis, prefix: env.prefix }),
      prefix: `${env.prefix}:`,
      displayName: 'query polls',
      now: () => NOW,
    });
  });
  afterEach(() => env.cleanup());

  it('is a read-only queue of the partition: waiting when the poll is due, delayed until then', async () => {
    expect(adapter.getName()).toBe(`${env.prefix}:${QUERY_POLLS}`);
    expect(adapter).toMatchObject({ readOnlyMode: true, allowRetries: false });
    expect(adapter.getStatuses()).toEqual(['latest', 'waiting', 'delayed']);
    const counts = await adapter.getJobCounts();
    expect(counts).toMatchObject({ waiting: 1, delayed: 1, active: 0, completed: 0, failed: 0 });

    const latest = await adapter.getJobs(['waiting', 'delayed'], 0, 9);
    expect(latest.map((job) => job.toJSON().id)).toEqual(['remote-due', 'remote-later']);
    expect(await Promise.all(latest.map((job) => job.getState()))).toEqual(['waiting', 'delayed']);
    expect((await adapter.getJobs(['delayed'], 0, 9)).map((job) => job.toJSON().id)).toEqual([
      'remote-later',
    ]);
    expect(await adapter.getJobs(['failed'], 0, 9)).toEqual([]);
  });

  it('shows each poll by category and remote job id: polls so far, next poll, age; no service id', async () => {
    const [, later] = await adapter.getJobs(['waiting', 'delayed'], 0, 9);
    const json = later?.toJSON();
    expect(json).toMatchObject({
      id: 'remote-later',
      name: 'CIR007',
      attemptsMade: 2,
      timestamp: SUBMITTED_AT,
      // bull-board's "will run at": the next poll.
      delay: NOW + 60_000 - SUBMITTED_AT,
      data: {
        ccsr_category: 'CIR007',
        remote_job_id: 'remote-later',
        query_id: null,
        polls: 2,
        next_poll_at: new Date(NOW + 60_000).toISOString(),
        submitted_at: new Date(SUBMITTED_AT).toISOString(),
        age_s: 90,
        last_poll_at: null,
        resubmits: 0,
      },
    });

    const found = await adapter.getJob('remote-due');
    expect(found?.toJSON()).toMatchObject({ id: 'remote-due', name: 'END002' });
    expect(await found?.getState()).toBe('waiting');
    expect(await adapter.getJob('remote-unknown')).toBeUndefined();
    expect(await adapter.getJobLogs()).toEqual([]);

    const shown = JSON.stringify([
      (await adapter.getJobs(['waiting', 'delayed'], 0, 9)).map((job) => job.toJSON()),
      found?.toJSON(),
    ]);
    expect(shown).not.toContain(PSID);
  });

  it('refuses every change (ReadOnlyError) and changes nothing', async () => {
    const key = pollSetKey(env.prefix);
    const before = await env.redis.zrange(key, '0', '-1', 'WITHSCORES');
    const [job] = await adapter.getJobs(['waiting'], 0, 0);
    if (job === undefined) throw new Error('no job listed');
    // As bull-board calls them.
    const board: BaseAdapter = adapter;
    const changes: [string, () => unknown][] = [
      ['clean', () => board.clean('delayed', 0)],
      ['addJob', () => board.addJob('END002', {}, {})],
      ['pause', () => board.pause()],
      ['resume', () => board.resume()],
      ['empty', () => board.empty()],
      ['obliterate', () => board.obliterate()],
      ['promoteAll', () => board.promoteAll()],
      ['removeJobScheduler', () => board.removeJobScheduler('x')],
      ['setGlobalConcurrency', () => board.setGlobalConcurrency(1)],
      ['updateJobScheduler', () => board.updateJobScheduler('x', { every: 1_000 })],
      ['job.promote', () => job.promote()],
      ['job.remove', () => job.remove()],
      ['job.retry', () => job.retry()],
    ];
    for (const [name, change] of changes) {
      const refused = await (async () => change())().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect({ name, refused: refused instanceof ReadOnlyError }).toEqual({ name, refused: true });
    }
    expect(await env.redis.zrange(key, '0', '-1', 'WITHSCORES')).toEqual(before);
  });
});
