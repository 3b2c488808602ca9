import type { JobsOptions } from 'bullmq';

/** The BullMQ queue of webhook deliveries: one job per event (per replay of it). */
export const WEBHOOK_DELIVERIES = 'webhook-deliveries';

/** A delivery job names its event; the event itself is kept once, in the delivery store. */
export interface WebhookJobData {
  event_id: string;
  /** `patient_service_id/ccsr_category`: which line the event waits in. */
  query_key: string;
}

/**
 * Jobs leave the queue when they end: a job only ends once its event is delivered, dead-lettered
 * or stale, and the store remembers that. A job that failed on an unexpected error (Redis gone for
 * longer than its attempts) is removed too, so that the recovery sweep can add it again.
 */
export const WEBHOOK_JOB_OPTIONS: JobsOptions = {
  attempts: 20,
  backoff: { type: 'exponential', delay: 1_000, jitter: 0.2 },
  removeOnComplete: true,
  removeOnFail: true,
};
