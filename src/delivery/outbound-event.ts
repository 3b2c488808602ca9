import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import { ResultEventSchema, type ResultEvent } from '../interface/result-event.ts';
import type { OutboundKeys } from './outbound-keyring.ts';
import { sealOutbound } from './outbound-seal.ts';

/**
 * A result event as the outbound queue carries it (the job's data): every field of the
 * {@link ResultEvent} except `patient_id`, which is replaced by `patient_id_sealed` (AES-256-GCM
 * under `OUTBOUND_KEY` or the sealing key of `OUTBOUND_KEYS`, associated data = the event `id`,
 * `$<id>$` in front unless the key is `0`; null when the event names no patient).
 * Open it with `openOutboundEvent` or `concordance-worker outbound open`.
 */
export const OutboundEventSchema = ResultEventSchema.omit({ patient_id: true }).extend({
  patient_id_sealed: z.string().min(1).nullable(),
});
export type OutboundEvent = z.infer<typeof OutboundEventSchema>;

/**
 * Replaces `patient_id` by its sealed form: under the sealing key of an outbound keyring (which
 * puts its id in front, `$<id>$`, unless it is key `0`), or under an AES key (see `outboundAesKey`)
 * in the form of key `0`.
 */
export function sealOutboundEvent(
  event: ResultEvent,
  keys: OutboundKeys | KeyObject,
): OutboundEvent {
  const { patient_id: patientId, ...rest } = event;
  const seal = (plaintext: string) =>
    'seal' in keys ? keys.seal(plaintext, event.id) : sealOutbound(keys, plaintext, event.id);
  return { ...rest, patient_id_sealed: patientId === null ? null : seal(patientId) };
}
