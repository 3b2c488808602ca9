import { createHash } from 'node:crypto';
import { LuaScript } from '../queues/lua-script.ts';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { normalizedContent } from './normalized-content.ts';
import type { ResultEvent } from '../interface/result-event.ts';

/** Compares each result with its key's last one and records it, one step per partition. */
const CHECK = LuaScript.load(new URL('./lua/check-changes.lua', import.meta.url));

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
    const [changed] = await this.checkMany([event]);
    return changed === true;
  }

  /**
   * {@link check} for several events, in order: one script call per partition rather than one per
   * event (a later event of the same key is compared with the earlier one).
   */
  async checkMany(events: readonly ResultEvent[]): Promise<boolean[]> {
    const byPrefix = new Map<string, number[]>();
    events.forEach((event, i) => {
      const prefix = patientPrefix(this.#prefix, event.patient_service_id);
      const indexes = byPrefix.get(prefix);
      if (indexes === undefined) byPrefix.set(prefix, [i]);
      else indexes.push(i);
    });
    const changed = new Array<boolean>(events.length).fill(false);
    await Promise.all(
      [...byPrefix].map(async ([prefix, indexes]) => {
        const keys: string[] = [];
        const args: string[] = [];
        for (const i of indexes) {
          const event = events[i] as ResultEvent;
          keys.push(`${prefix}:delivery:last:${event.patient_service_id}/${event.ccsr_category}`);
          args.push(this.contentHash(event), event.id);
        }
        const answers = (await CHECK.run(this.#redis, keys, args)) as number[];
        indexes.forEach((i, n) => (changed[i] = answers[n] === 1));
      }),
    );
    return changed;
  }
}
