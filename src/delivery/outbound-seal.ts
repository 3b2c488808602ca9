import type { KeyObject } from 'node:crypto';
import { aesGcmOpen, aesGcmSeal, hkdfKey, IV_BYTES, TAG_BYTES } from '../identity/aes-gcm.ts';
import { OutboundKeyError } from './outbound-key-error.ts';

/**
 * The HKDF-SHA256 `info` that turns `OUTBOUND_KEY` into the AES-256-GCM key (empty salt, 32 bytes).
 * Part of the documented format: a consumer in any language derives the same key with it.
 */
export const OUTBOUND_HKDF_INFO = 'concordance-worker outbound v1';

/** The bytes of an `OUTBOUND_KEY`: hex (64+ digits) or base64, at least 32 bytes. */
function decodeSecret(secret: string, variable: string): Buffer {
  const text = secret.trim();
  const canonical = (s: string) => s.replace(/=+$/, '');
  let bytes: Buffer;
  if (/^[0-9a-f]{64,}$/i.test(text)) bytes = Buffer.from(text, 'hex');
  else {
    bytes = Buffer.from(text, 'base64');
    if (canonical(bytes.toString('base64')) !== canonical(text))
      throw new OutboundKeyError(`${variable} must be base64 or hex`);
  }
  if (bytes.length < 32) throw new OutboundKeyError(`${variable} must hold at least 32 bytes`);
  return bytes;
}

/**
 * The AES-256-GCM key of an `OUTBOUND_KEY`: HKDF-SHA256(key bytes, salt empty,
 * {@link OUTBOUND_HKDF_INFO}), as a key object to derive once and keep. `variable` names the
 * setting in errors (an `OUTBOUND_KEYS` entry's secret is derived the same way).
 */
export function outboundAesKey(secret: string, variable = 'OUTBOUND_KEY'): KeyObject {
  return hkdfKey(decodeSecret(secret, variable), OUTBOUND_HKDF_INFO);
}

/** AES-256-GCM, random 96-bit IV, `aad` as associated data: base64url(iv | tag | ciphertext). */
export function sealOutbound(aesKey: KeyObject, plaintext: string, aad: string): string {
  return aesGcmSeal(aesKey, plaintext, Buffer.from(aad, 'utf8')).toString('base64url');
}

/** The inverse of {@link sealOutbound}; throws when the key or the associated data is not the one sealed with. */
export function openOutbound(aesKey: KeyObject, sealed: string, aad: string): string {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new OutboundKeyError('sealed value too short');
  return aesGcmOpen(aesKey, raw, Buffer.from(aad, 'utf8')).toString('utf8');
}
