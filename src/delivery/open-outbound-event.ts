import { OutboundKeyError } from './outbound-key-error.ts';
import { OutboundEventSchema } from './outbound-event.ts';
import { openOutbound, outboundAesKey } from './outbound-seal.ts';
import type { ResultEvent } from './result-event.ts';

/**
 * Opens an event taken from the outbound queue (a job's `data`) with the hospital's
 * `OUTBOUND_KEY`: returns the result event with its plain `patient_id`. Several keys may be given
 * (during a key rotation: the new one and the old one); the first that opens it wins. Throws an
 * {@link OutboundKeyError} when none does (a wrong key, or an event that was altered).
 */
export function openOutboundEvent(data: unknown, keys: string | readonly string[]): ResultEvent {
  const { patient_id_sealed: sealed, ...event } = OutboundEventSchema.parse(data);
  if (sealed === null) return { ...event, patient_id: null };
  // A malformed key throws here: that is a configuration error, not a key that does not fit.
  const aesKeys = (typeof keys === 'string' ? [keys] : keys).map(outboundAesKey);
  for (const aesKey of aesKeys) {
    try {
      return { ...event, patient_id: openOutbound(aesKey, sealed, event.id) };
    } catch {
      // Not this key (or altered): try the next.
    }
  }
  throw new OutboundKeyError(
    `event ${event.id}: no OUTBOUND_KEY given opens its patient_id (wrong key, or the event was altered)`,
  );
}
