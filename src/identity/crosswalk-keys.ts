import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/** The crosswalk secret is unusable: too short, or not base64/hex. */
export class CrosswalkKeyError extends Error {
  static readonly code = 'ERR_CROSSWALK_KEY';
  readonly code = CrosswalkKeyError.code;

  constructor(message: string) {
    super(message);
    this.name = 'CrosswalkKeyError';
  }
}

/** Keys derived from `CROSSWALK_KEY`, one per purpose, so that no key serves two. */
export interface CrosswalkKeys {
  /** HMAC-SHA256 of a local identifier: the lookup key that never reveals it. */
  lookup(value: string): string;
  /** AES-256-GCM with a random IV; `context` is bound as associated data. */
  seal(plaintext: string | Buffer, context: string): string;
  open(sealed: string, context: string): Buffer;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

function decode(secret: string): Buffer {
  const text = secret.trim();
  if (/^[0-9a-f]{64,}$/i.test(text)) return Buffer.from(text, 'hex');
  const bytes = Buffer.from(text, 'base64');
  if (
    bytes.length === 0 ||
    bytes.toString('base64').replace(/=+$/, '') !== text.replace(/=+$/, '')
  ) {
    throw new CrosswalkKeyError('CROSSWALK_KEY must be base64 or hex');
  }
  return bytes;
}

/** A fresh secret in the form `CROSSWALK_KEY` takes (32 random bytes, base64). */
export function generateCrosswalkSecret(): string {
  return randomBytes(32).toString('base64');
}

/** Derives the lookup and sealing keys (HKDF-SHA256) from a secret of at least 32 bytes. */
export function deriveCrosswalkKeys(secret: string): CrosswalkKeys {
  const master = decode(secret);
  if (master.length < 32) throw new CrosswalkKeyError('CROSSWALK_KEY must hold at least 32 bytes');
  const derive = (purpose: string) =>
    Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `concordance-worker ${purpose}`, 32));
  const hmacKey = derive('lookup v1');
  const sealKey = derive('seal v1');

  return {
    lookup: (value) => createHmac('sha256', hmacKey).update(value, 'utf8').digest('base64url'),
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', sealKey, iv).setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
    },
    open(sealed, context) {
      const raw = Buffer.from(sealed, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', sealKey, raw.subarray(0, IV_BYTES))
        .setAAD(Buffer.from(context))
        .setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    },
  };
}
