import { createHash } from 'node:crypto';
import { LuaScript } from '../queues/lua-script.ts';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { normalizedContent } from './normalized-content.ts';
import type { ResultEvent } from '../interface/result-event.ts';

/** Compares with the key's last result and records this one, in one step. */
const CHECK = LuaScript.load(new URL('./lua/check-change.lua', import.meta.url));

export interface ChangeDetectorOptions {
  redis: RedisClient;
  /** A prefix, or the partitions (a key's last result lives in its patient's partition). */
  prefix: KeySpace;
  /** Keys ignored at any depth (`delivery.change_detection.ignore_fields`). */
  ignoreFields: readonly string[];
}

/**
 * Decides whether a result differs from the last one handed over for its (patient_service_id,
 * ccsr_category). Compared: the outcome (so a failure after a success counts as a change), the
 * error code and the normalized concordance (or Prevent recommendations, under the key
 * `<psid>/prevent`). The first result of a key is always a change.
 */
export class ChangeDetector {
  readonly #redis: RedisClient;
  readonly #prefix: KeySpace;
  readonly #ignoreFields: readonly string[];

  constructor({ redis, prefix, ignoreFields }: ChangeDetectorOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#ignoreFields = ignoreFields;
  }

  /** The fingerprint of what a result says (not of when or why it was produced). */
  contentHash(event: ResultEvent): string {
    // ignore_fields apply inside the concordance (and a Prevent answer) only: the outcome itself
    // is never ignored. A concordance event's fingerprint is what it always was.
    const content = JSON.stringify([
      event.status,
      event.error?.code ?? null,
      normalizedContent(event.concordance, this.#ignoreFields),
      ...(event.prevent === undefined
        ? []
        : [normalizedContent(event.prevent, this.#ignoreFields)]),
    ]);
    return createHash('sha256').update(content).digest('hex');
  }

  /** Records `event` as the key's latest result; true when it differs from the previous one. */
  async check(event: ResultEvent): Promise<boolean> {
    const prefix = patientPrefix(this.#prefix, event.patient_service_id);
    const key = `${prefix}:delivery:last:${event.patient_service_id}/${event.ccsr_category}`;
    const changed = await CHECK.run(this.#redis, [key], [this.contentHash(event), event.id]);
    return changed === 1;
  }
}
