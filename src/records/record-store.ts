import { LuaScript } from '../queues/lua-script.ts';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { AssembledPatientSchema, type AssembledPatient } from '../interface/assembled-patient.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import { normalizedContent } from '../delivery/normalized-content.ts';
import { applyClinicalChanges } from './apply-clinical-changes.ts';
import type { ClinicalChange } from './clinical-change.ts';
import {
  ClinicalRecordSchema,
  emptyClinicalRecord,
  type ClinicalRecord,
} from './clinical-record.ts';

/** Stores the record and raises the version in one step, so that no reader sees one without the other. */
const PUT = LuaScript.load(new URL('./lua/put-record.lua', import.meta.url));

/**
 * Writes the clinical record only if nobody changed the patient's record since it was read, so
 * that concurrent feeds never lose each other's changes (the caller re-reads and retries).
 */
const PUT_CLINICAL = LuaScript.load(new URL('./lua/put-clinical.lua', import.meta.url));

export interface StoredRecord {
  /** Rises by one on every change, from any feed; never reused. */
  version: number;
  /** An AssembledPatient sent as JSON: when present it is what the service gets. */
  record?: AssembledPatient;
  /** The normalized record the HL7 v2 and FHIR feeds keep up to date. */
  clinical?: ClinicalRecord;
  updatedAt: string;
}

export interface RecordStoreOptions {
  redis: RedisClient;
  /** A prefix, or the partitions: a record lives in its patient's partition. */
  prefix: KeySpace;
  keys: CrosswalkKeys;
}

/** The current AssembledPatient of each patient, sealed at rest (AES-256-GCM). */
export class RecordStore {
  readonly #redis: RedisClient;
  readonly #prefix: KeySpace;
  readonly #keys: CrosswalkKeys;

  constructor({ redis, prefix, keys }: RecordStoreOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#keys = keys;
  }

  #key(patientServiceId: string): string {
    return this.keyOf(patientServiceId);
  }

  /** The Redis hash of a patient's record (for scripts that write it with other keys). */
  keyOf(patientServiceId: string): string {
    return `${patientPrefix(this.#prefix, patientServiceId)}:rec:${patientServiceId}`;
  }

  /** A JSON record sealed as the `record` field of {@link keyOf} holds it. */
  sealRecord(patientServiceId: string, record: AssembledPatient): string {
    return this.#keys.seal(JSON.stringify(record), `rec:${patientServiceId}`);
  }

  /**
   * A keyed hash (HMAC-SHA256 under the crosswalk lookup key) of a JSON record's normalized content
   * (keys sorted), bound to the patient: equal for the same record sent again, and revealing
   * nothing of it at rest. Ingest compares it to tell an identical update.
   */
  contentHmac(patientServiceId: string, record: AssembledPatient): string {
    return this.#keys.lookup(`content v1|${patientServiceId}|${normalizedContent(record, [])}`);
  }

  /** A clinical record sealed as the `clinical` field of {@link keyOf} holds it. */
  sealClinical(patientServiceId: string, clinical: ClinicalRecord): string {
    return this.#keys.seal(JSON.stringify(clinical), `clin:${patientServiceId}`);
  }

  /** Opens a sealed clinical record of the patient (empty when `sealed` is undefined). */
  openClinical(patientServiceId: string, sealed: string | undefined): ClinicalRecord {
    return sealed === undefined
      ? emptyClinicalRecord()
      : ClinicalRecordSchema.parse(this.#open(patientServiceId, sealed, 'clin'));
  }

  /** The version and clinical record (empty when none is stored), read together. */
  async readClinical(
    patientServiceId: string,
  ): Promise<{ version: number; clinical: ClinicalRecord }> {
    const [version, sealed] = await this.#redis.hmget(
      this.#key(patientServiceId),
      'version',
      'clinical',
    );
    return {
      version: Number(version ?? 0),
      clinical: this.openClinical(patientServiceId, sealed ?? undefined),
    };
  }

  /** Replaces the record; returns its new version. */
  async put(patientServiceId: string, record: AssembledPatient, now = new Date()): Promise<number> {
    return (await PUT.run(
      this.#redis,
      [this.#key(patientServiceId)],
      [this.sealRecord(patientServiceId, record), now.toISOString()],
    )) as number;
  }

  async get(patientServiceId: string): Promise<StoredRecord | undefined> {
    const [version, sealed, clinical, updatedAt] = await this.#redis.hmget(
      this.#key(patientServiceId),
      'version',
      'record',
      'clinical',
      'updated_at',
    );
    return this.opened(patientServiceId, { version, sealed, clinical, updatedAt });
  }

  /**
   * The stored record from the raw fields of its hash (`version`, `record`, `clinical`,
   * `updated_at`), as a script read them; `undefined` when there is none.
   */
  opened(
    patientServiceId: string,
    raw: {
      version: string | null | undefined;
      sealed: string | null | undefined;
      clinical: string | null | undefined;
      updatedAt: string | null | undefined;
    },
  ): StoredRecord | undefined {
    const { version, sealed, clinical, updatedAt } = raw;
    if (version == null) return undefined;
    return {
      version: Number(version),
      ...(sealed == null
        ? {}
        : { record: AssembledPatientSchema.parse(this.#open(patientServiceId, sealed, 'rec')) }),
      ...(clinical == null
        ? {}
        : { clinical: ClinicalRecordSchema.parse(this.#open(patientServiceId, clinical, 'clin')) }),
      updatedAt: updatedAt ?? '',
    };
  }

  #open(patientServiceId: string, sealed: string, purpose: string): unknown {
    return JSON.parse(this.#keys.open(sealed, `${purpose}:${patientServiceId}`).toString('utf8'));
  }

  /**
   * Applies a feed message's changes to the clinical record. Returns the version after it and
   * whether anything changed (a message that says nothing new leaves the version as it was).
   */
  async updateClinical(
    patientServiceId: string,
    changes: readonly ClinicalChange[],
    now = new Date(),
  ): Promise<{ version: number; changed: boolean; clinical: ClinicalRecord }> {
    for (;;) {
      const [version, sealed] = await this.#redis.hmget(
        this.#key(patientServiceId),
        'version',
        'clinical',
      );
      const current = Number(version ?? 0);
      const record = this.openClinical(patientServiceId, sealed ?? undefined);
      const next = applyClinicalChanges(record, changes, current + 1);
      if (!next.changed) return { version: current, changed: false, clinical: record };
      const written = (await PUT_CLINICAL.run(
        this.#redis,
        [this.#key(patientServiceId)],
        [current, this.sealClinical(patientServiceId, next.record), now.toISOString()],
      )) as number;
      if (written !== -1) return { version: written, changed: true, clinical: next.record };
    }
  }

  /** Forgets the patient's record (the prior patient of a merge); the version is kept, never reused. */
  async remove(patientServiceId: string): Promise<void> {
    await this.#redis.hdel(this.#key(patientServiceId), 'record', 'clinical');
  }

  /** The current version without opening the record (0 when there is none). */
  async version(patientServiceId: string): Promise<number> {
    return Number((await this.#redis.hget(this.#key(patientServiceId), 'version')) ?? 0);
  }
}
