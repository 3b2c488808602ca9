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
  /**
   * The message trace's retention, seconds, when unchanged results are held back
   * (`delivery.only_changed`): each one's delivery trace notes `unchanged_at`. @defaultValue 0
   * (nothing written)
   */
  holdTraceTtlS?: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/** What {@link ChangeDetector.checkWithFeeds} finds for a result. */
export interface CheckedResult {
  changed: boolean;
  /** The feed that opened its query, from its delivery trace; undefined when none. */
  feed: string | undefined;
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
  readonly #holdTraceTtlS: number;
  readonly #now: () => number;

  constructor({ redis, prefix, ignoreFields, holdTraceTtlS, now }: ChangeDetectorOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#ignoreFields = ignoreFields;
    this.#holdTraceTtlS = holdTraceTtlS ?? 0;
    this.#now = now ?? Date.now;
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
    return (await this.checkWithFeeds(events)).map((c) => c.changed);
  }

  /**
   * {@link checkMany}, each answer with the feed of its event's delivery trace (for
   * `cw_feed_messages_total{stage="delivered"}`), in the same script call.
   */
  async checkWithFeeds(events: readonly ResultEvent[]): Promise<CheckedResult[]> {
    const byPrefix = new Map<string, number[]>();
    events.forEach((event, i) => {
      const prefix = patientPrefix(this.#prefix, event.patient_service_id);
      const indexes = byPrefix.get(prefix);
      if (indexes === undefined) byPrefix.set(prefix, [i]);
      else indexes.push(i);
    });
    const checked = events.map((): CheckedResult => ({ changed: false, feed: undefined }));
    const now = this.#now();
    await Promise.all(
      [...byPrefix].map(async ([prefix, indexes]) => {
        const keys: string[] = [];
        const args: (string | number)[] = [prefix, this.#holdTraceTtlS, now];
        for (const i of indexes) {
          const event = events[i] as ResultEvent;
          keys.push(`${prefix}:delivery:last:${event.patient_service_id}/${event.ccsr_category}`);
          args.push(this.contentHash(event), event.id);
        }
        const answers = (await CHECK.run(this.#redis, keys, args)) as (number | string)[];
        indexes.forEach((i, n) => {
          const feed = answers[2 * n + 1];
          checked[i] = {
            changed: answers[2 * n] === 1,
            feed: feed === undefined || feed === '' ? undefined : String(feed),
          };
        });
      }),
    );
    return checked;
  }
}
