import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import { ResultEventSchema, type ResultEvent } from '../interface/result-event.ts';
import { sealOutbound } from './outbound-seal.ts';

/**
 * A result event as the outbound queue carries it (the job's data): every field of the
 * {@link ResultEvent} except `patient_id`, which is replaced by `patient_id_sealed` (AES-256-GCM
 * under `OUTBOUND_KEY`, associated data = the event `id`; null when the event names no patient).
 * Open it with `openOutboundEvent` or `concordance-worker outbound open`.
 */
export const OutboundEventSchema = ResultEventSchema.omit({ patient_id: true }).extend({
  patient_id_sealed: z.string().min(1).nullable(),
});
export type OutboundEvent = z.infer<typeof OutboundEventSchema>;

/** Replaces `patient_id` by its sealed form under the outbound AES key (see `outboundAesKey`). */
export function sealOutboundEvent(event: ResultEvent, aesKey: KeyObject): OutboundEvent {
  const { patient_id: patientId, ...rest } = event;
  return {
    ...rest,
    patient_id_sealed: patientId === null ? null : sealOutbound(aesKey, patientId, event.id),
  };
}
