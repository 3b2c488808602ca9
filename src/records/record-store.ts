import type { Redis } from 'ioredis';
import { AssembledPatientSchema, type AssembledPatient } from '../interface/assembled-patient.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';

/** Stores the record and raises the version in one step, so that no reader sees one without the other. */
const PUT = `
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'updated_at', ARGV[2])
return version
`;

export interface StoredRecord {
  /** Rises by one on every change; never reused. */
  version: number;
  record: AssembledPatient;
  updatedAt: string;
}

export interface RecordStoreOptions {
  redis: Redis;
  prefix: string;
  keys: CrosswalkKeys;
}

/** The current AssembledPatient of each patient, sealed at rest (AES-256-GCM). */
export class RecordStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #keys: CrosswalkKeys;

  constructor({ redis, prefix, keys }: RecordStoreOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#keys = keys;
  }

  #key(patientServiceId: string): string {
    return `${this.#prefix}:rec:${patientServiceId}`;
  }

  /** Replaces the record; returns its new version. */
  async put(patientServiceId: string, record: AssembledPatient, now = new Date()): Promise<number> {
    const sealed = this.#keys.seal(JSON.stringify(record), `rec:${patientServiceId}`);
    return (await this.#redis.eval(
      PUT,
      1,
      this.#key(patientServiceId),
      sealed,
      now.toISOString(),
    )) as number;
  }

  async get(patientServiceId: string): Promise<StoredRecord | undefined> {
    const [version, sealed, updatedAt] = await this.#redis.hmget(
      this.#key(patientServiceId),
      'version',
      'record',
      'updated_at',
    );
    if (version == null || sealed == null) return undefined;
    const json: unknown = JSON.parse(
      this.#keys.open(sealed, `rec:${patientServiceId}`).toString('utf8'),
    );
    return {
      version: Number(version),
      record: AssembledPatientSchema.parse(json),
      updatedAt: updatedAt ?? '',
    };
  }

  /** The current version without opening the record (0 when there is none). */
  async version(patientServiceId: string): Promise<number> {
    return Number((await this.#redis.hget(this.#key(patientServiceId), 'version')) ?? 0);
  }
}
