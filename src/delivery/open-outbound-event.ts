import type { KeyObject } from 'node:crypto';
import { OutboundKeyError } from './outbound-key-error.ts';
import { OutboundEventSchema } from './outbound-event.ts';
import { openOutbound, outboundAesKey } from './outbound-seal.ts';
import type { ResultEvent } from '../interface/result-event.ts';

/** An `OUTBOUND_KEY` as text, or the AES key `outboundAesKey` derived from it. */
export type OutboundOpenKey = string | KeyObject;

const isOne = (keys: OutboundOpenKey | readonly OutboundOpenKey[]): keys is OutboundOpenKey =>
  !Array.isArray(keys);

/**
 * Opens an event taken from the outbound queue (a job's `data`) with the hospital's
 * `OUTBOUND_KEY`: returns the result event with its plain `patient_id`. Several keys may be given
 * (during a key rotation: the new one and the old one); the first that opens it wins. Throws an
 * {@link OutboundKeyError} when none does (a wrong key, or an event that was altered). A key is the
 * `OUTBOUND_KEY` text, or its AES key from `outboundAesKey`: who opens many events derives that
 * once and passes it.
 */
export function openOutboundEvent(
  data: unknown,
  keys: OutboundOpenKey | readonly OutboundOpenKey[],
): ResultEvent {
  const { patient_id_sealed: sealed, ...event } = OutboundEventSchema.parse(data);
  if (sealed === null) return { ...event, patient_id: null };
  // A malformed key throws here: that is a configuration error, not a key that does not fit.
  const aesKeys = (isOne(keys) ? [keys] : keys).map((key) =>
    typeof key === 'string' ? outboundAesKey(key) : key,
  );
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
