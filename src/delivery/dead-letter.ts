import { z } from 'zod';
import { ResultEventSchema } from '../interface/result-event.ts';

/** The last thing that went wrong with a dead-lettered delivery. */
export const DeadLetterErrorSchema = z.object({
  /** e.g. `ERR_WEBHOOK_GONE`, `ERR_WEBHOOK_STATUS`, `ERR_WEBHOOK_TIMEOUT`, `ERR_WEBHOOK_NETWORK`. */
  code: z.string(),
  /** The endpoint's HTTP status, when it answered. */
  status: z.int().nullable(),
  message: z.string(),
});
export type DeadLetterError = z.infer<typeof DeadLetterErrorSchema>;

/** A result event a channel gave up on, kept for `concordance-worker replay`. */
export const DeadLetterSchema = z.object({
  event: ResultEventSchema,
  /** The channel that gave up (`webhook`). */
  channel: z.string(),
  last_error: DeadLetterErrorSchema,
  attempts: z.int().min(0),
  first_attempt_at: z.iso.datetime().nullable(),
  last_attempt_at: z.iso.datetime().nullable(),
  dead_lettered_at: z.iso.datetime(),
});
export type DeadLetter = z.infer<typeof DeadLetterSchema>;

/**
 * A dead letter as shown without opening its event (the operator's queue view): the letter and
 * the event fields that name no patient. Parsing a kept letter with it drops the rest — the
 * `patient_id` (sealed or not), `patient_service_id`, the result and what triggered it.
 */
export const DeadLetterSummarySchema = DeadLetterSchema.extend({
  event: ResultEventSchema.pick({
    id: true,
    type: true,
    created_at: true,
    ccsr_category: true,
    status: true,
  }),
});
export type DeadLetterSummary = z.infer<typeof DeadLetterSummarySchema>;
