import type { Job, Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import { LegacyQueryJobDataSchema, type LegacyQueryJobData } from './query-job.ts';
import { outboxMember, queryOutboxKey, queryStateKey } from './query-outbox.ts';
import type { QueryState } from './query-state.ts';

/**
 * Job states the migration takes: those not started, and failed (a 0.3 worker that met a 0.1 job
 * failed it as `ERR_QUERY_JOB_DATA`); not `active`, which an old worker still holds.
 */
const STATES = ['waiting', 'delayed', 'prioritized', 'waiting-children', 'failed'] as const;

/** Jobs read per page. */
const PAGE = 200;

export interface MigrateQueryJobsOptions {
  /** The partition's `concordance-queries` queue. */
  queue: Queue;
  /** A connection to the partition's Redis. */
  redis: RedisClient;
  state: QueryState;
  /** The partition's prefix. */
  prefix: string;
  now: number;
  /** Count what would move, change nothing. */
  dryRun?: boolean;
}

/** How many 0.1 jobs moved, by where they went. */
export interface MigratedQueryJobs {
  /** To the outbox (not yet submitted): they become 0.3 jobs through the relay. */
  outbox: number;
  /** To the poll set (submitted: their remote job is polled, due now). */
  polls: number;
}

/** The 0.1 jobs of `states` in the queue (0.1 job data: a whole query record with its step). */
async function legacyJobs(queue: Queue): Promise<{ job: Job; data: LegacyQueryJobData }[]> {
  const found: { job: Job; data: LegacyQueryJobData }[] = [];
  for (let start = 0; ; start += PAGE) {
    const jobs = await queue.getJobs([...STATES], start, start + PAGE - 1, true);
    for (const job of jobs) {
      const parsed = LegacyQueryJobDataSchema.safeParse(job.data);
      if (parsed.success) found.push({ job, data: parsed.data });
    }
    if (jobs.length < PAGE) return found;
  }
}

/**
 * Moves the query jobs of 0.1 (one BullMQ job for a query's whole life, its data the query's
 * record and step) that a partition's `concordance-queries` queue still holds into 0.3's
 * structures; run once, with the workers stopped, by `concordance-worker redis migrate-query-jobs`
 * (docs/command-line.md); safe to run again:
 * - a job not yet claimed (`scheduled`) or claimed but not submitted (`submitting`) goes to the
 *   outbox, due now, keeping its query id, resubmissions and failed attempts;
 * - a job polling its remote job goes to the poll set, due now (as if just submitted).
 * The 0.1 job is removed once its query is written (a run cut short in between moves it again;
 * the writes are idempotent). 0.3 jobs are left as they are.
 */
export async function migrateQueryJobs(
  options: MigrateQueryJobsOptions,
): Promise<MigratedQueryJobs> {
  const { queue, state, prefix, now, redis } = options;
  const outbox = queryOutboxKey(prefix);
  const moved: MigratedQueryJobs = { outbox: 0, polls: 0 };
  for (const { job, data } of await legacyJobs(queue)) {
    const { patientServiceId: psid, ccsrCategory: category, seq } = data;
    const polling = data.step === 'polling' && data.remoteJobId !== undefined;
    if (polling) moved.polls += 1;
    else moved.outbox += 1;
    if (options.dryRun === true) continue;
    if (polling) {
      await state.markSubmitted(
        psid,
        category,
        seq,
        {
          remoteJobId: data.remoteJobId ?? '',
          submittedAt: data.submittedAt ?? now,
          resubmits: data.resubmits,
          recordVersion: data.recordVersion ?? 0,
          queryId: data.queryId,
          polls: data.polls,
        },
        now,
      );
    } else {
      const qs = queryStateKey(prefix, psid, category);
      await redis
        .multi()
        .hsetnx(qs, `i:${seq}`, data.queryId)
        .hset(qs, `n:${seq}`, data.resubmits, `f:${seq}`, job.attemptsMade)
        .zadd(
          outbox,
          'NX',
          now,
          outboxMember({ patientServiceId: psid, ccsrCategory: category, seq }),
        )
        .exec();
    }
    await job.remove();
  }
  return moved;
}
