import { createHmac, randomBytes } from 'node:crypto';
import { seededRandom, uuidFrom, type Random } from '../seeded-random.ts';

/**
 * Per-patient service identifiers (section 5.4). Only a keyed HMAC of the caller's identifier is
 * kept, never the identifier itself; the key lives in this process only, so the stored values
 * mean nothing elsewhere. The service ids are drawn from the seed, in registration order.
 */
export class PatientRegistry {
  readonly #key = randomBytes(32);
  readonly #idByDigest = new Map<string, string>();
  readonly #ids = new Set<string>();
  readonly #random: Random;

  constructor(seed: number) {
    this.#random = seededRandom(seed, 'patients');
  }

  get size(): number {
    return this.#ids.size;
  }

  /** The service id for this identifier; `created` is false when it was registered before. */
  register(identifier: string): { id: string; created: boolean } {
    const digest = createHmac('sha256', this.#key).update(identifier, 'utf8').digest('base64url');
    const known = this.#idByDigest.get(digest);
    if (known !== undefined) return { id: known, created: false };
    const id = uuidFrom(this.#random);
    this.#idByDigest.set(digest, id);
    this.#ids.add(id);
    return { id, created: true };
  }

  has(id: string): boolean {
    return this.#ids.has(id);
  }
}
