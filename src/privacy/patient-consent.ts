import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';

/**
 * The Redis key of a patient's opt-out: a plain string holding the time of the opt-out (ISO
 * 8601). The atomic ingest script checks this exact key to skip scheduling queries.
 */
export function optOutKey(prefix: string, patientServiceId: string): string {
  return `${prefix}:optout:${patientServiceId}`;
}

export interface PatientConsentOptions {
  redis: RedisClient;
  /** A prefix, or the partitions (an opt-out lives in its patient's partition). */
  prefix: KeySpace;
}

/**
 * Whether a patient has opted out of concordance queries. While opted out, record updates are
 * still accepted and stored, but no query is scheduled (ingest) nor submitted (worker).
 */
export class PatientConsent {
  readonly #redis: RedisClient;
  readonly #prefix: KeySpace;

  constructor({ redis, prefix }: PatientConsentOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  /**
   * Opts the patient out. An opt-out already in force keeps its first time, so that repeating
   * the call changes nothing; returns the time in force and whether this call set it.
   */
  async optOut(
    patientServiceId: string,
    now = new Date(),
  ): Promise<{ optedOutAt: string; created: boolean }> {
    const key = optOutKey(patientPrefix(this.#prefix, patientServiceId), patientServiceId);
    const set = await this.#redis.set(key, now.toISOString(), 'NX');
    if (set === 'OK') return { optedOutAt: now.toISOString(), created: true };
    const existing = await this.#redis.get(key);
    return { optedOutAt: existing ?? now.toISOString(), created: false };
  }

  /** Lifts the opt-out; true when one was in force. */
  async optIn(patientServiceId: string): Promise<boolean> {
    return (
      (await this.#redis.del(
        optOutKey(patientPrefix(this.#prefix, patientServiceId), patientServiceId),
      )) === 1
    );
  }

  /** The worker calls this before submitting a query (and ingest's script checks the same key). */
  async isOptedOut(patientServiceId: string): Promise<boolean> {
    return (
      (await this.#redis.exists(
        optOutKey(patientPrefix(this.#prefix, patientServiceId), patientServiceId),
      )) === 1
    );
  }

  /** When the opt-out in force was made, if one is. */
  async optedOutAt(patientServiceId: string): Promise<string | undefined> {
    return (
      (await this.#redis.get(
        optOutKey(patientPrefix(this.#prefix, patientServiceId), patientServiceId),
      )) ?? undefined
    );
  }
}
