import { createHmac, randomBytes } from 'node:crypto';
import { aesGcmOpen, aesGcmSeal, hkdfKey } from './aes-gcm.ts';
import { ConcordanceError } from '../errors/concordance-error.ts';

/** The crosswalk secret is unusable: too short, or not base64/hex. */
export class CrosswalkKeyError extends ConcordanceError {
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
  /**
   * The lookup HMAC of `value` under every key that may have named an entry, the sealing key's
   * first (a keyring during a rotation: see `CrosswalkKeyring`); one key: `[lookup(value)]`.
   */
  lookups(value: string): string[];
  /** AES-256-GCM with a random IV; `context` is bound as associated data. */
  seal(plaintext: string | Buffer, context: string): string;
  open(sealed: string, context: string): Buffer;
}

function decode(secret: string, variable: string): Buffer {
  const text = secret.trim();
  if (/^[0-9a-f]{64,}$/i.test(text)) return Buffer.from(text, 'hex');
  const bytes = Buffer.from(text, 'base64');
  if (
    bytes.length === 0 ||
    bytes.toString('base64').replace(/=+$/, '') !== text.replace(/=+$/, '')
  ) {
    throw new CrosswalkKeyError(`${variable} must be base64 or hex`);
  }
  return bytes;
}

/** A fresh secret in the form `CROSSWALK_KEY` takes (32 random bytes, base64). */
export function generateCrosswalkSecret(): string {
  return randomBytes(32).toString('base64');
}

/**
 * Derives the lookup and sealing keys (HKDF-SHA256) from a secret of at least 32 bytes, once:
 * each call of the returned object reuses them. `variable` names the secret in errors.
 */
export function deriveCrosswalkKeys(secret: string, variable = 'CROSSWALK_KEY'): CrosswalkKeys {
  const master = decode(secret, variable);
  if (master.length < 32) throw new CrosswalkKeyError(`${variable} must hold at least 32 bytes`);
  const hmacKey = hkdfKey(master, 'concordance-worker lookup v1');
  const sealKey = hkdfKey(master, 'concordance-worker seal v1');
  master.fill(0);

  const lookup = (value: string) =>
    createHmac('sha256', hmacKey).update(value, 'utf8').digest('base64url');
  return {
    lookup,
    lookups: (value) => [lookup(value)],
    seal: (plaintext, context) =>
      aesGcmSeal(sealKey, plaintext, Buffer.from(context, 'utf8')).toString('base64'),
    open: (sealed, context) =>
      aesGcmOpen(sealKey, Buffer.from(sealed, 'base64'), Buffer.from(context, 'utf8')),
  };
}
