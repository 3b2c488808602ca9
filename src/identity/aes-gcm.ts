import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  hkdfSync,
  randomFillSync,
  type KeyObject,
} from 'node:crypto';

/**
 * AES-256-GCM as every sealed value here is laid out: `iv (12 bytes) | tag (16 bytes) | ciphertext`,
 * the associated data bound but not stored. Keys are {@link KeyObject}s prepared once: Node sets up
 * a key given as bytes on every cipher it makes (several µs each), a key object not.
 */

/** Bytes of the random IV that opens a sealed value. */
export const IV_BYTES = 12;
/** Bytes of the GCM tag that follows it. */
export const TAG_BYTES = 16;

/** IVs drawn from the CSPRNG at a time (one call instead of one per seal). */
const IVS_PER_DRAW = 1_024;

let ivPool = Buffer.alloc(0);
let ivOffset = 0;

/**
 * A fresh random IV. Drawn in batches; each is handed out once, and a batch is never refilled
 * (a new one is drawn), so a view still held elsewhere never changes.
 */
function nextIv(): Buffer {
  if (ivOffset === ivPool.length) {
    ivPool = randomFillSync(Buffer.allocUnsafeSlow(IV_BYTES * IVS_PER_DRAW));
    ivOffset = 0;
  }
  const iv = ivPool.subarray(ivOffset, ivOffset + IV_BYTES);
  ivOffset += IV_BYTES;
  return iv;
}

/** The 32-byte HKDF-SHA256 (empty salt) of `master` for `info`, as a key object to keep. */
export function hkdfKey(master: Buffer, info: string): KeyObject {
  return createSecretKey(Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), info, 32)));
}

/** Seals `plaintext` (a string as UTF-8) under `key` with a fresh random IV: iv | tag | ciphertext. */
export function aesGcmSeal(key: KeyObject, plaintext: string | Buffer, aad: Buffer): Buffer {
  const iv = nextIv();
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(aad);
  const body = cipher.update(plaintext);
  const rest = cipher.final(); // empty: GCM is a stream mode
  return Buffer.concat([iv, cipher.getAuthTag(), body, rest]);
}

/**
 * The plaintext of a value {@link aesGcmSeal} made. Throws when the key, the associated data or a
 * byte of the value differs from the sealing, and when the value is too short to hold a full tag.
 */
export function aesGcmOpen(key: KeyObject, sealed: Buffer, aad: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES), {
    authTagLength: TAG_BYTES,
  })
    .setAAD(aad)
    .setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  const body = decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES));
  const rest = decipher.final();
  return rest.length === 0 ? body : Buffer.concat([body, rest]);
}
