import type { Job, JobType } from 'bullmq';

/** How many waiting and delayed submission jobs `status` reads, per partition, to find retries. */
export const RETRY_SCAN_LIMIT = 1_000;

/** The submission jobs of a partition that failed before and wait for another attempt. */
export interface RetryingSubmissions {
  /** Waiting or delayed jobs with a failed attempt behind them (BullMQ's `attemptsMade` > 0). */
  retrying: number;
  /** False when more jobs wait than were read ({@link RETRY_SCAN_LIMIT}): `retrying` is a floor. */
  complete: boolean;
  /** The newest failure among them (`<message>`, a service error: no patient data), else null. */
  last_error: string | null;
  /** When that failure happened (epoch ms; the attempt's start), else null. */
  last_error_at: number | null;
}

/** What is read of a queue (a BullMQ `Queue` is one). */
export interface SubmissionQueue {
  getJobs(types: JobType[], start: number, end: number, asc: boolean): Promise<Job[]>;
}

/**
 * Reads up to `limit` waiting and `limit` delayed jobs of a partition's `concordance-queries`
 * queue and counts those retrying after a failure (a job delayed for its debounce, a birth date
 * or a rate limit spent no attempt). BullMQ keeps no count of them, hence the bounded read.
 */
export async function retryingSubmissions(
  queue: SubmissionQueue,
  limit = RETRY_SCAN_LIMIT,
): Promise<RetryingSubmissions> {
  const [waiting, delayed] = await Promise.all([
    queue.getJobs(['waiting'], 0, limit - 1, true),
    queue.getJobs(['delayed'], 0, limit - 1, true),
  ]);
  const retrying = [...waiting, ...delayed].filter((job) => job.attemptsMade > 0);
  let newest: Job | undefined;
  for (const job of retrying) {
    if ((job.processedOn ?? 0) >= (newest?.processedOn ?? 0)) newest = job;
  }
  return {
    retrying: retrying.length,
    complete: waiting.length < limit && delayed.length < limit,
    last_error: newest?.failedReason ?? null,
    last_error_at: newest?.processedOn ?? null,
  };
}
