import { z } from 'zod';

/** How a query ended, as its result event says. */
export const QUERY_OUTCOMES = ['completed', 'failed', 'lost', 'timed_out', 'rejected'] as const;
export type QueryOutcome = (typeof QUERY_OUTCOMES)[number];

/**
 * The event types: a concordance query's, and a Prevent run's (the reserved preset `prevent`,
 * whose `ccsr_category` is `prevent`, whose answer is `prevent` and whose `concordance` is null).
 */
export const RESULT_EVENT_TYPES = [
  'concordance.completed',
  'concordance.failed',
  'prevent.completed',
  'prevent.failed',
] as const;

/**
 * The result of one logical query, the same for every output channel. It is handed back to the
 * hospital, so it names the hospital's own `patient_id`; it never goes to the service.
 */
export const ResultEventSchema = z.object({
  /** Stable per logical query: the same on every redelivery. */
  id: z.uuid(),
  type: z.enum(RESULT_EVENT_TYPES),
  created_at: z.iso.datetime(),
  patient_id: z.string().nullable(),
  patient_service_id: z.string(),
  ccsr_category: z.string(),
  record_version: z.int().nullable(),
  triggered_by: z.object({
    event_ids: z.array(z.string()),
    /** How many updates the query covers (the list keeps only the newest ids). */
    count: z.int(),
    first_update_at: z.string().nullable(),
    last_update_at: z.string().nullable(),
  }),
  remote_job_id: z.string().nullable(),
  status: z.enum(QUERY_OUTCOMES),
  concordance: z.record(z.string(), z.unknown()).nullable(),
  /**
   * Prevent events only: the service's recommendations as it answered them (unknown fields kept),
   * null when the run failed. Absent from concordance events.
   */
  prevent: z.record(z.string(), z.unknown()).nullable().optional(),
  error: z
    .object({
      code: z.string(),
      message: z.string(),
      items: z
        .array(
          z.object({
            loc: z.array(z.union([z.string(), z.number()])),
            msg: z.string(),
            type: z.string(),
          }),
        )
        .optional(),
    })
    .nullable(),
  /**
   * Whether the result differs from the last one handed over for its (patient, category): set by
   * the delivery router just before the event leaves through a channel (absent before that).
   */
  changed: z.boolean().optional(),
});
export type ResultEvent = z.infer<typeof ResultEventSchema>;
