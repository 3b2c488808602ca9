import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FaultyRedis } from '../../test/support/faulty-redis.ts';
import { isolatedRedis } from '../../test/support/redis.ts';
import { PollListing } from './poll-listing.ts';
import { holdKey, PollSet, pollSetKey, type PolledRemoteJob } from './poll-set.ts';
import { QueryState } from './query-state.ts';

/** The random service ids of the patients: no listing may carry them. */
const psid = (n: number) => `psid-not-shown-${n}`;
const NOW = 10_000;

const remote = (id: string, extra: Partial<PolledRemoteJob> = {}): PolledRemoteJob => ({
  remoteJobId: id,
  submittedAt: 1_000,
  resubmits: 0,
  recordVersion: 2,
  queryId: `00000000-0000-4000-8000-${id.padStart(12, '0')}`,
  polls: 0,
  ...extra,
});

describe('PollListing (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let state: QueryState;
  let listing: PollListing;

  beforeEach(async () => {
    env = await isolatedRedis();
    state = new QueryState({ redis: env.redis, prefix: env.prefix });
    listing = new PollListing({ redis: env.redis, prefix: env.prefix });
  });
  afterEach(() => env.cleanup());

  /** Opens, claims and submits a query of patient `n`, its first poll at `firstPollAt`. */
  async function submitted(
    n: number,
    category: string,
    firstPollAt: number,
    job: PolledRemoteJob = remote(`j${n}`),
  ): Promise<void> {
    const trigger = { eventId: `ev-${n}`, at: '2026-01-01T00:00:00Z' };
    const { seq } = await state.schedule(psid(n), category, trigger, 0);
    await state.claim(psid(n), category, seq);
    await state.markSubmitted(psid(n), category, seq, job, firstPollAt);
  }

  it('lists the due polls and the later ones apart: category, remote job, polls, times; never the service id', async () => {
    await submitted(1, 'END002', 300);
    await submitted(2, 'CIR007', 9_000, remote('j2', { queryId: undefined, resubmits: 1 }));
    await submitted(3, 'END002', 60_000);
    // A poll made the real way: leased, found still running, written back for later.
    const polls = new PollSet({
      redis: env.redis,
      prefix: env.prefix,
      holdKey: holdKey(env.prefix),
      pauseKey: `${env.prefix}:paused-for-test`,
    });
    const [leased, ...others] = await polls.lease(5_000, 1, 65_000);
    expect(others).toEqual([]);
    if (leased === undefined) throw new Error('nothing was leased');
    expect(leased.remote.remoteJobId).toBe('j1');
    await polls.apply([
      {
        kind: 'again',
        poll: leased,
        at: 20_000,
        remote: { ...leased.remote, polls: 1, lastPollAt: 5_000 },
      },
    ]);

    expect(await listing.counts(NOW)).toEqual({ due: 1, later: 2 });
    expect(await listing.page('due', 0, 9, NOW)).toEqual([
      {
        ccsrCategory: 'CIR007',
        nextPollAt: 9_000,
        remoteJobId: 'j2',
        queryId: null,
        submittedAt: 1_000,
        polls: 0,
        lastPollAt: null,
        resubmits: 1,
      },
    ]);
    const later = await listing.page('later', 0, 9, NOW);
    expect(later).toEqual([
      {
        ccsrCategory: 'END002',
        nextPollAt: 20_000,
        remoteJobId: 'j1',
        queryId: remote('j1').queryId,
        submittedAt: 1_000,
        polls: 1,
        lastPollAt: 5_000,
        resubmits: 0,
      },
      expect.objectContaining({ remoteJobId: 'j3', nextPollAt: 60_000, polls: 0 }),
    ]);
    // Everything is due once its time has come.
    expect((await listing.page('due', 0, 9, 60_000)).map((p) => p.remoteJobId)).toEqual([
      'j2',
      'j1',
      'j3',
    ]);
    expect(JSON.stringify([later, await listing.page('due', 0, 9, NOW)])).not.toContain(
      'psid-not-shown',
    );
  });

  it('reads only the page asked for: one ZRANGE by rank and one HGET per member, whatever the set holds', async () => {
    // 30 due (first polls at 100..129) and 30 later (at 20_000..20_029).
    for (let n = 0; n < 30; n++) await submitted(n, 'END002', 100 + n);
    for (let n = 30; n < 60; n++) await submitted(n, 'END002', 20_000 + n - 30);
    const counted = new FaultyRedis(env.redis);
    const paged = new PollListing({ redis: counted.client, prefix: env.prefix });

    counted.reset();
    const due = await paged.page('due', 10, 14, NOW);
    expect(due.map((p) => p.remoteJobId)).toEqual(['j10', 'j11', 'j12', 'j13', 'j14']);
    expect(counted.count).toBe(1 + 5); // ZRANGE, then 5 HGETs

    counted.reset();
    const later = await paged.page('later', 25, 34, NOW);
    // Past the end: only what is there.
    expect(later.map((p) => p.remoteJobId)).toEqual(['j55', 'j56', 'j57', 'j58', 'j59']);
    expect(counted.count).toBe(2 + 5); // ZCOUNT (where the later ones start), ZRANGE, 5 HGETs

    counted.reset();
    expect(await paged.page('later', 30, 39, NOW)).toEqual([]);
    expect(counted.count).toBe(2);

    // A range to the end, or too long, is cut to maxPage.
    const capped = new PollListing({ redis: counted.client, prefix: env.prefix, maxPage: 4 });
    counted.reset();
    const first = await capped.page('due', 0, -1, NOW);
    expect(first.map((p) => p.remoteJobId)).toEqual(['j0', 'j1', 'j2', 'j3']);
    expect(counted.count).toBe(1 + 4);
    expect(await capped.page('later', 2, 1_000, NOW)).toHaveLength(4);
  });

  it('leaves out a member whose remote job is gone, or of another shape', async () => {
    await submitted(1, 'END002', 100);
    await submitted(2, 'END002', 200);
    await state.finish(psid(1), 'END002', 1);
    await env.redis.zadd(pollSetKey(env.prefix), 150, 'not-a-member');
    expect(await listing.counts(NOW)).toEqual({ due: 3, later: 0 });
    expect((await listing.page('due', 0, 9, NOW)).map((p) => p.remoteJobId)).toEqual(['j2']);
    expect(await listing.find('j1')).toBeUndefined();
  });

  it('finds a poll by its remote job id, step by step through the set', async () => {
    for (let n = 0; n < 12; n++) await submitted(n, n % 2 === 0 ? 'END002' : 'CIR007', 100 * n);
    const stepping = new PollListing({ redis: env.redis, prefix: env.prefix, scanCount: 2 });
    expect(await stepping.find('j7')).toEqual({
      ccsrCategory: 'CIR007',
      nextPollAt: 700,
      remoteJobId: 'j7',
      queryId: remote('j7').queryId,
      submittedAt: 1_000,
      polls: 0,
      lastPollAt: null,
      resubmits: 0,
    });
    expect(await stepping.find('j-unknown')).toBeUndefined();
    expect(await new PollListing({ redis: env.redis, prefix: `${env.prefix}x` }).find('j1')).toBe(
      undefined,
    );
  });
});
