import { createHmac } from 'node:crypto';
import { decodeKeyText } from '../config/secret-strength.ts';
import { ConcordanceError } from '../errors/concordance-error.ts';
import { hkdfKey } from './aes-gcm.ts';

/** `PREVENT_ID_KEY` is unusable: not base64 or hex, or shorter than 32 bytes. */
export class PreventIdKeyError extends ConcordanceError {
  static readonly code = 'ERR_PREVENT_ID_KEY';
  readonly code = PreventIdKeyError.code;
}

/** The HKDF label of the identifier key: a new label would be a new key (see below). */
const INFO = 'concordance-worker prevent unique_patient_identifier v1';

/**
 * The `unique_patient_identifier` Prevent registers a patient with (interface section 5.4): a keyed
 * hash of the hospital's own patient id, HMAC-SHA256 under a key derived (HKDF-SHA256) from
 * `PREVENT_ID_KEY`, as 64 lower-case hex digits. Without the key nobody can tell which local id it
 * stands for, nor compute it for a guessed one; with it the same local id always gives the same
 * identifier.
 *
 * The key is its own (not `CROSSWALK_KEY`) and is NEVER rotated: the service counts unique
 * patients by this identifier (and keeps it, encrypted, for traceability and audit), so a new key
 * would make every patient a new patient to it. `keys rotate` does not touch it.
 *
 * @throws PreventIdKeyError when the key is not base64 or hex, or holds fewer than 32 bytes.
 */
export function preventIdentifier(secret: string): (localId: string) => string {
  const master = decodeKeyText(secret);
  if (master === undefined) throw new PreventIdKeyError('PREVENT_ID_KEY must be base64 or hex');
  if (master.length < 32) {
    throw new PreventIdKeyError('PREVENT_ID_KEY must hold at least 32 bytes');
  }
  const key = hkdfKey(master, INFO);
  master.fill(0);
  return (localId) => createHmac('sha256', key).update(localId, 'utf8').digest('hex');
}
