import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pollSetKey } from '../../../src/queries/poll-set.ts';
import { queryOutboxKey, queryStateKey } from '../../../src/queries/query-outbox.ts';
import { QueryState } from '../../../src/queries/query-state.ts';
import { CONCORDANCE_QUERIES } from '../../../src/queues/queue-names.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';

describe('concordance-worker redis migrate-query-jobs (the 0.3 upgrade step)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let queue: Queue;
  beforeEach(async () => {
    env = await isolatedRedis();
    queue = new Queue(CONCORDANCE_QUERIES, { connection: env.redis, prefix: env.prefix });
  });
  afterEach(async () => {
    await queue.close();
    await env.cleanup();
  });

  async function migrate(...args: string[]) {
    const cli = new CliProcess(['redis', 'migrate-query-jobs', ...args], {
      REDIS_URL: testRedisUrl(),
      REDIS_PREFIX: env.prefix,
    });
    const code = await cli.exited;
    return { code, output: cli.stdout.join('\n') };
  }

  it('moves 0.1 jobs to the outbox and the poll set, leaves 0.3 jobs, and a second run moves nothing', async () => {
    const state = new QueryState({ redis: env.redis, prefix: env.prefix });
    const at = '2026-01-01T00:00:00Z';
    // 0.1: a query scheduled (open), one claimed while submitting, one polling its remote job.
    await state.schedule('p-open', 'END002', { eventId: 'ev-1', at }, 0);
    await state.schedule('p-sub', 'END002', { eventId: 'ev-2', at }, 0);
    await state.claim('p-sub', 'END002', 1);
    await state.schedule('p-poll', 'END002', { eventId: 'ev-3', at }, 0);
    await state.claim('p-poll', 'END002', 1);
    // Ingest of 0.3 wrote the outbox; 0.1 had only its jobs: the entries are not there.
    await env.redis.del(queryOutboxKey(env.prefix));
    const legacy = (psid: string, step: string, extra = {}) => ({
      queryId: randomUUID(),
      patientServiceId: psid,
      ccsrCategory: 'END002',
      seq: 1,
      step,
      polls: 0,
      resubmits: 0,
      ...extra,
    });
    await queue.add('query', legacy('p-open', 'scheduled'), {
      jobId: 'q-p-open-END002-1',
      delay: 60_000,
    });
    const submitting = legacy('p-sub', 'submitting');
    await queue.add('query', submitting, { jobId: 'q-p-sub-END002-1' });
    await queue.add(
      'query',
      legacy('p-poll', 'polling', {
        remoteJobId: 'remote-1',
        submittedAt: 1_000,
        recordVersion: 2,
      }),
      { jobId: 'q-p-poll-END002-1' },
    );
    // A 0.3 job: which query it submits, nothing else.
    const current = {
      patientServiceId: 'p-new',
      ccsrCategory: 'END002',
      seq: 1,
      resubmits: 0,
      dueAt: 1_000,
    };
    await queue.add('END002', current, { jobId: 'q-p-new-END002-1' });

    const dry = await migrate('--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.output).toContain(`${env.prefix}: to the outbox 2, to the poll set 1`);
    expect(dry.output).toContain('dry run: nothing changed');
    expect(await queue.count()).toBe(4);

    const run = await migrate();
    expect(run.code).toBe(0);
    expect(run.output).toContain(`${env.prefix}: to the outbox 2, to the poll set 1`);
    expect((await queue.getJobs(['waiting', 'delayed'])).map((j) => j.id)).toEqual([
      'q-p-new-END002-1',
    ]);
    expect((await env.redis.zrange(queryOutboxKey(env.prefix), '0', '-1')).sort()).toEqual([
      'p-open|END002|1',
      'p-sub|END002|1',
    ]);
    expect(await env.redis.zrange(pollSetKey(env.prefix), '0', '-1')).toEqual(['p-poll|END002|1']);
    const polled = await env.redis.hget(queryStateKey(env.prefix, 'p-poll', 'END002'), 'r:1');
    expect(JSON.parse(polled ?? '{}')).toMatchObject({ remoteJobId: 'remote-1', recordVersion: 2 });
    // The claimed query keeps its id: its result event will carry it.
    const sub = await env.redis.hget(queryStateKey(env.prefix, 'p-sub', 'END002'), 'i:1');
    expect(sub).toBe(submitting.queryId);

    const again = await migrate();
    expect(again.output).toContain(`${env.prefix}: to the outbox 0, to the poll set 0`);
  });
});
