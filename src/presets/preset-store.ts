import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { z } from 'zod';
import { PRESET_SOURCES, type PresetSource } from './preset-source.ts';

export interface PresetStoreOptions {
  redis: RedisClient;
  /**
   * Key prefix, with a hash tag (`{cw}`) so that a patient's keys share a Redis Cluster slot; or
   * the partitions (a patient's presets live in its partition).
   */
  prefix: KeySpace;
}

/** One stored preset of a patient. */
export interface StoredPreset {
  ccsr_category: string;
  source: PresetSource;
  /** When the preset was first stored (ISO 8601). */
  created_at: string;
}

const StoredValueSchema = z.object({
  source: z.enum(PRESET_SOURCES),
  created_at: z.string(),
});

/**
 * The concordance queries preset per patient, one Redis hash per patient service id: field = CCSR
 * category, value = `{source, created_at}`. Keys carry only the random service id, never the
 * hospital's own patient id.
 */
export class PresetStore {
  readonly #redis: RedisClient;
  readonly #prefix: KeySpace;

  constructor({ redis, prefix }: PresetStoreOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  #key(patientServiceId: string): string {
    return this.keyOf(patientServiceId);
  }

  /** The Redis hash of a patient's presets (for scripts that write it with other keys). */
  keyOf(patientServiceId: string): string {
    return `${patientPrefix(this.#prefix, patientServiceId)}:presets:${patientServiceId}`;
  }

  /**
   * Stores the preset unless the patient has it already; an existing preset keeps its source and
   * creation time (HSETNX, so two concurrent registrations agree on one).
   */
  async put(
    patientServiceId: string,
    ccsrCategory: string,
    source: PresetSource,
    now = new Date(),
  ): Promise<'created' | 'existing'> {
    const value = JSON.stringify({ source, created_at: now.toISOString() });
    const created = await this.#redis.hsetnx(this.#key(patientServiceId), ccsrCategory, value);
    return created === 1 ? 'created' : 'existing';
  }

  /** One preset of the patient, if stored. */
  async get(patientServiceId: string, ccsrCategory: string): Promise<StoredPreset | undefined> {
    const raw = await this.#redis.hget(this.#key(patientServiceId), ccsrCategory);
    return raw === null ? undefined : parse(ccsrCategory, raw);
  }

  /** True when the preset existed and is now gone. */
  async delete(patientServiceId: string, ccsrCategory: string): Promise<boolean> {
    return (await this.#redis.hdel(this.#key(patientServiceId), ccsrCategory)) === 1;
  }

  /** Every stored preset of the patient, ordered by category so that listings are stable. */
  async list(patientServiceId: string): Promise<StoredPreset[]> {
    const all = await this.#redis.hgetall(this.#key(patientServiceId));
    return Object.entries(all)
      .map(([category, raw]) => parse(category, raw))
      .sort((a, b) => a.ccsr_category.localeCompare(b.ccsr_category));
  }
}

function parse(ccsrCategory: string, raw: string): StoredPreset {
  return { ccsr_category: ccsrCategory, ...StoredValueSchema.parse(JSON.parse(raw)) };
}
