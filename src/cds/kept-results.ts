import type { ResultKeeper } from '../delivery/result-keeper.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import { LuaScript } from '../queues/lua-script.ts';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import {
  KeptResultSchema,
  keptResultContext,
  keptResultOf,
  keptResultsKey,
  type KeptResult,
} from './kept-result.ts';

const KEEP_RESULT = LuaScript.load(new URL('./lua/keep-result.lua', import.meta.url));

/** Field suffixes of a category's order and expiry (see lua/keep-result.lua). */
const META = /\|[vtx]$/;

export interface KeptResultsOptions {
  redis: RedisClient;
  /** A prefix, or the partitions: a patient's kept results are in its partition. */
  prefix: KeySpace;
  /** The crosswalk keys (the at-rest keyring): each result is sealed with them. */
  keys: Pick<CrosswalkKeys, 'seal' | 'open'>;
  /** `privacy.record_retention_days`: a kept result expires this long after it was kept (0: never). */
  retentionDays: number;
  /**
   * The key of the patient's opt-out flag (src/privacy/patient-consent.ts): an opted-out patient
   * has no kept result to read. @defaultValue none: not checked
   */
  optOutKeyOf?: (prefix: string, patientServiceId: string) => string;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * The results kept for the CDS Hooks service (docs/cds-hooks.md): the latest completed result of
 * each (patient, category), sealed (AES-256-GCM under the crosswalk keyring, bound to the patient
 * and category), in one hash per patient in its partition (`P:cds:<psid>`). Written as results are
 * delivered (a {@link ResultKeeper} of the delivery router), read by the CDS Hooks routes, erased
 * by purge and opt-out (a patient eraser named `cds_results`).
 */
export class KeptResults implements ResultKeeper {
  readonly name = 'cds_results';
  readonly #o: KeptResultsOptions;
  readonly #now: () => number;

  constructor(options: KeptResultsOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  #key(patientServiceId: string): string {
    return keptResultsKey(patientPrefix(this.#o.prefix, patientServiceId), patientServiceId);
  }

  /** Keeps each completed result unless a newer one of its (patient, category) is kept. */
  async keep(events: readonly ResultEvent[]): Promise<void> {
    const retentionMs = this.#o.retentionDays * 86_400_000;
    const now = this.#now();
    await Promise.all(
      events.map(async (event) => {
        const kept = keptResultOf(event);
        if (kept === undefined) return;
        const psid = event.patient_service_id;
        const sealed = this.#o.keys.seal(
          JSON.stringify(kept),
          keptResultContext(psid, kept.ccsr_category),
        );
        await KEEP_RESULT.run(
          this.#o.redis,
          [this.#key(psid)],
          [
            kept.ccsr_category,
            kept.record_version ?? -1,
            kept.created_at,
            sealed,
            retentionMs,
            now,
          ],
        );
      }),
    );
  }

  /**
   * The patient's kept results that have not expired, by category (code order). Empty for an
   * opted-out patient. A value that does not open (another patient's, or altered) is skipped.
   */
  async read(patientServiceId: string): Promise<KeptResult[]> {
    const prefix = patientPrefix(this.#o.prefix, patientServiceId);
    const optOutKey = this.#o.optOutKeyOf?.(prefix, patientServiceId);
    const [fields, optedOut] = await Promise.all([
      this.#o.redis.hgetall(keptResultsKey(prefix, patientServiceId)),
      optOutKey === undefined ? 0 : this.#o.redis.exists(optOutKey),
    ]);
    if (optedOut > 0) return [];
    const now = this.#now();
    const results: KeptResult[] = [];
    for (const category of Object.keys(fields).sort()) {
      if (META.test(category)) continue;
      const expiry = Number(fields[`${category}|x`] ?? '0');
      if (expiry !== 0 && expiry <= now) continue;
      const opened = this.#open(fields[category] as string, patientServiceId, category);
      if (opened !== undefined) results.push(opened);
    }
    return results;
  }

  #open(sealed: string, patientServiceId: string, category: string): KeptResult | undefined {
    try {
      const text = this.#o.keys
        .open(sealed, keptResultContext(patientServiceId, category))
        .toString('utf8');
      const parsed = KeptResultSchema.safeParse(JSON.parse(text));
      return parsed.success && parsed.data.ccsr_category === category ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** Removes the patient's kept results (purge, opt-out); how many categories it held. */
  async erase(patientServiceId: string): Promise<number> {
    const key = this.#key(patientServiceId);
    const [[, fields], [, deleted]] = (await this.#o.redis.multi().hkeys(key).del(key).exec()) as [
      [null, string[]],
      [null, number],
    ];
    return deleted === 1 ? fields.filter((field) => !META.test(field)).length : 0;
  }
}
