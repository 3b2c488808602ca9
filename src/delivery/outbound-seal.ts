import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { OutboundKeyError } from './outbound-key-error.ts';

/**
 * The HKDF-SHA256 `info` that turns `OUTBOUND_KEY` into the AES-256-GCM key (empty salt, 32 bytes).
 * Part of the documented format: a consumer in any language derives the same key with it.
 */
export const OUTBOUND_HKDF_INFO = 'concordance-worker outbound v1';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The bytes of an `OUTBOUND_KEY`: hex (64+ digits) or base64, at least 32 bytes. */
function decodeSecret(secret: string): Buffer {
  const text = secret.trim();
  const canonical = (s: string) => s.replace(/=+$/, '');
  let bytes: Buffer;
  if (/^[0-9a-f]{64,}$/i.test(text)) bytes = Buffer.from(text, 'hex');
  else {
    bytes = Buffer.from(text, 'base64');
    if (canonical(bytes.toString('base64')) !== canonical(text))
      throw new OutboundKeyError('OUTBOUND_KEY must be base64 or hex');
  }
  if (bytes.length < 32) throw new OutboundKeyError('OUTBOUND_KEY must hold at least 32 bytes');
  return bytes;
}

/** The AES-256-GCM key of an `OUTBOUND_KEY`: HKDF-SHA256(key bytes, salt empty, {@link OUTBOUND_HKDF_INFO}). */
export function outboundAesKey(secret: string): Buffer {
  return Buffer.from(
    hkdfSync('sha256', decodeSecret(secret), Buffer.alloc(0), OUTBOUND_HKDF_INFO, 32),
  );
}

/** AES-256-GCM, random 96-bit IV, `aad` as associated data: base64url(iv | tag | ciphertext). */
export function sealOutbound(aesKey: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', aesKey, iv).setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** The inverse of {@link sealOutbound}; throws when the key or the associated data is not the one sealed with. */
export function openOutbound(aesKey: Buffer, sealed: string, aad: string): string {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new OutboundKeyError('sealed value too short');
  const decipher = createDecipheriv('aes-256-gcm', aesKey, raw.subarray(0, IV_BYTES))
    .setAAD(Buffer.from(aad, 'utf8'))
    .setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([
    decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)),
    decipher.final(),
  ]).toString('utf8');
}
