import type { JobsOptions } from 'bullmq';
import { z } from 'zod';

/**
 * The data of a query job of 0.1, whose one BullMQ job carried a query through its whole life
 * (`step` and the fields after it were rewritten as it advanced). Read only to migrate such jobs
 * (`concordance-worker redis migrate-query-jobs`, see migrate-query-jobs.ts).
 */
export const LegacyQueryJobDataSchema = z.object({
  /** Random per logical query: the id of its result event. */
  queryId: z.uuid(),
  patientServiceId: z.string().min(1),
  ccsrCategory: z.string().min(1),
  /** The query's sequence number within its key (see QueryState). */
  seq: z.int().positive(),
  step: z.enum(['scheduled', 'submitting', 'polling']).default('scheduled'),
  triggers: z
    .object({
      eventIds: z.array(z.string()),
      count: z.int(),
      firstAt: z.string(),
      lastAt: z.string(),
    })
    .optional(),
  recordVersion: z.int().optional(),
  remoteJobId: z.string().optional(),
  submittedAt: z.number().optional(),
  /** When the next poll was scheduled for (epoch ms): lateness is measured against it. */
  nextPollAt: z.number().optional(),
  polls: z.int().min(0).default(0),
  resubmits: z.int().min(0).default(0),
});
export type LegacyQueryJobData = z.infer<typeof LegacyQueryJobDataSchema>;

/**
 * The data of a job of the `concordance-queries` queue: which query it submits. Everything else
 * (triggers, record, attempts) is read from the query's per-key state when the job runs, so that
 * the coalescing and supersession rules never depend on what a job carries. No patient
 * identifier: the patient is named by its random service id.
 */
export const SubmissionJobDataSchema = z.strictObject({
  patientServiceId: z.string().min(1),
  ccsrCategory: z.string().min(1),
  /** The query's sequence number within its key (see QueryState). */
  seq: z.int().positive(),
  /** Resubmissions before this one (a remote job the service lost is submitted again). */
  resubmits: z.int().min(0),
  /** When the query became due (epoch ms): the end of its debounce. */
  dueAt: z.number(),
});
export type SubmissionJobData = z.infer<typeof SubmissionJobDataSchema>;

/**
 * The job id of a query's submission: the query's own (its patient, category and seq), and its
 * resubmission after it (`-r<n>`), so that adding the same submission again is the same job.
 */
export function submissionJobId(query: {
  patientServiceId: string;
  ccsrCategory: string;
  seq: number;
  resubmits: number;
}): string {
  const id = queryJobId(query.patientServiceId, query.ccsrCategory, query.seq);
  return query.resubmits === 0 ? id : `${id}-r${query.resubmits}`;
}

/** A BullMQ job id per logical query: no colons, never all digits. */
export function queryJobId(patientServiceId: string, category: string, seq: number): string {
  return `${queryJobIdPrefix(patientServiceId)}${category}-${seq}`;
}

/** What every query job id of a patient starts with. */
export function queryJobIdPrefix(patientServiceId: string): string {
  return `q-${patientServiceId}-`;
}

/**
 * The options of every submission job: retries (`queries.submit_attempts`, exponential backoff
 * from `queries.submit_backoff_ms`, ±20 %) and bounded retention of finished jobs (completed: the
 * last 1,000 for an hour; failed: the last 10,000 for 7 days), so that the queue view and
 * `status` show what happened.
 */
export function queryJobOptions(queries: {
  submit_attempts: number;
  submit_backoff_ms: number;
}): JobsOptions {
  return {
    attempts: queries.submit_attempts,
    backoff: { type: 'exponential', delay: queries.submit_backoff_ms, jitter: 0.2 },
    removeOnComplete: { count: 1_000, age: 3_600 },
    removeOnFail: { count: 10_000, age: 7 * 24 * 3_600 },
  };
}
