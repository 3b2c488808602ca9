import type { Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import { QueryJobDataSchema } from './query-job.ts';
import { outboxMember, queryOutboxKey, queryStateKey } from './query-outbox.ts';
import type { QueryState } from './query-state.ts';

/** Job states the migration takes (not `active`: an old worker still holds those). */
const WAITING = ['waiting', 'delayed', 'prioritized', 'waiting-children'] as const;

export interface MigrateQueryJobsOptions {
  /** The partition's BullMQ query queue of the design before the due sets. */
  queue: Queue;
  /** A connection to the partition's Redis. */
  redis: RedisClient;
  state: QueryState;
  /** The partition's prefix. */
  prefix: string;
  now: number;
}

/**
 * Moves what the query queue of the design before the due sets still holds into the due sets
 * (run by every worker at start; nothing to do, and one read, once the queue is empty):
 * - a job not yet claimed (`scheduled`) or claimed but not submitted (`submitting`) goes back to
 *   the due set of new queries, due now, keeping its query id, resubmissions and failed attempts;
 * - a job polling its remote job goes to the due set of polls, due now (as if just submitted).
 * Jobs an old worker holds (`active`) are left to it: they end there, or stall back to waiting and
 * move at the next start. Returns how many jobs moved.
 */
export async function migrateQueryJobs(options: MigrateQueryJobsOptions): Promise<number> {
  const { queue, state, prefix, now, redis } = options;
  const due = queryOutboxKey(prefix);
  const counts = await queue.getJobCounts(...WAITING);
  if (Object.values(counts).every((n) => n === 0)) return 0;
  let moved = 0;
  for (;;) {
    const jobs = await queue.getJobs([...WAITING], 0, 199);
    if (jobs.length === 0) return moved;
    for (const job of jobs) {
      const parsed = QueryJobDataSchema.safeParse(job.data);
      if (parsed.success) {
        const data = parsed.data;
        const { patientServiceId: psid, ccsrCategory: category, seq } = data;
        const member = outboxMember({ patientServiceId: psid, ccsrCategory: category, seq });
        if (data.step === 'polling' && data.remoteJobId !== undefined) {
          await state.markSubmitted(
            psid,
            category,
            seq,
            {
              remoteJobId: data.remoteJobId,
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
            .zadd(due, 'NX', now, member)
            .exec();
        }
      }
      await job.remove();
      moved += 1;
    }
  }
}
