import type { KeyObject } from 'node:crypto';
import { OutboundKeyError } from './outbound-key-error.ts';
import { OutboundEventSchema } from './outbound-event.ts';
import { OutboundKeyIdError, UnnamedOutboundKeys, type OutboundKeys } from './outbound-keyring.ts';
import type { ResultEvent } from '../interface/result-event.ts';

/** An `OUTBOUND_KEY` as text, or the AES key `outboundAesKey` derived from it. */
export type OutboundOpenKey = string | KeyObject;

const isKeys = (
  keys: OutboundKeys | OutboundOpenKey | readonly OutboundOpenKey[],
): keys is OutboundKeys => typeof keys === 'object' && 'open' in keys && 'seal' in keys;

/**
 * Opens an event taken from the outbound queue (a job's `data`): returns the result event with its
 * plain `patient_id`.
 *
 * - With an `OutboundKeyring` (`OUTBOUND_KEYS`, or `OutboundKeyring.legacy(OUTBOUND_KEY)`), the
 *   key the sealed value names (`$<id>$`, none for key `0`) opens it: an id the keyring does not
 *   hold throws {@link OutboundKeyIdError} (`ERR_OUTBOUND_KEY_ID`, naming the id only).
 * - With one key or a list (the `OUTBOUND_KEY` text, or its AES key from `outboundAesKey`: who
 *   opens many events derives that once), each is tried in turn whatever the id: how consumers
 *   written before keyrings keep working.
 *
 * Throws an {@link OutboundKeyError} when no key opens it (a wrong key, or an altered event).
 */
export function openOutboundEvent(
  data: unknown,
  keys: OutboundKeys | OutboundOpenKey | readonly OutboundOpenKey[],
): ResultEvent {
  const { patient_id_sealed: sealed, ...event } = OutboundEventSchema.parse(data);
  if (sealed === null) return { ...event, patient_id: null };
  const opener = isKeys(keys)
    ? keys
    : new UnnamedOutboundKeys(Array.isArray(keys) ? keys : [keys as OutboundOpenKey]);
  try {
    return { ...event, patient_id: opener.open(sealed, event.id) };
  } catch (err) {
    if (err instanceof OutboundKeyIdError) throw err;
    throw new OutboundKeyError(
      `event ${event.id}: no OUTBOUND_KEY given opens its patient_id (wrong key, or the event was altered)`,
      { cause: err },
    );
  }
}
