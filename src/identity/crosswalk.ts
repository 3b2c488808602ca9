import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { LuaScript } from '../queues/lua-script.ts';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import type { CrosswalkKeys } from './crosswalk-keys.ts';

/** Creates the entry unless another process got there first; returns the id in force. */
const RESOLVE = LuaScript.load(new URL('./lua/resolve-entry.lua', import.meta.url));

/** Successive merges followed by {@link Crosswalk.findCurrent} (a loop ends there). */
export const MAX_MERGE_HOPS = 16;

/** A crosswalk entry to be created by a script: see {@link Crosswalk.plan}. */
export interface CrosswalkPlan {
  patientServiceId: string;
  /** Hash `{psid, local}` found by the local id's HMAC. */
  forwardKey: string;
  /** The sealed local id, found by the service id. */
  reverseKey: string;
  sealedLocalId: string;
}

/** Deletes the entry if it still names the service id read before (else another change won). */
const REMOVE = LuaScript.load(new URL('./lua/remove-entry.lua', import.meta.url));

/** {@link REMOVE} of the lookup entry alone, when the sealed copy lives in another partition. */
const REMOVE_FORWARD = LuaScript.load(new URL('./lua/remove-lookup-entry.lua', import.meta.url));

/** Sets a field of a lookup entry only while the entry names a given service id. */
const SET_IF_NAMED = LuaScript.load(new URL('./lua/set-if-named.lua', import.meta.url));

/** The lookup entry's field of the patient's Prevent id (see `Crosswalk.preventPatientIdOf`). */
export const PREVENT_PATIENT_ID = 'prevent_patient_id';

/** The associated data a Prevent id is sealed with: bound to our own service id. */
export const preventContext = (patientServiceId: string): string => `xwp:${patientServiceId}`;

export interface CrosswalkOptions {
  redis: RedisClient;
  /**
   * Key prefix, with a hash tag (`{cw}`) so that a patient's keys share a Redis Cluster slot; or
   * the partitions (`redis.partitions` > 1): the lookup entry of a local id lives in the partition
   * of its HMAC, everything named by a service id in that id's partition, and a new service id is
   * drawn in its local id's partition so that both are in one slot when the entry is created.
   */
  prefix: KeySpace;
  keys: CrosswalkKeys;
}

/**
 * The hospital's own patient ids and the service ids that stand for them. The local id is looked
 * up only by its HMAC and stored only sealed (AES-256-GCM), bound to its service id.
 */
/** Opaque FHIR ids this process has stored lately, at most (see `opaqueFhirId`). */
const OPAQUE_IDS_KEPT = 50_000;

export class Crosswalk {
  readonly #redis: RedisClient;
  readonly #space: KeySpace;
  readonly #keys: CrosswalkKeys;
  /**
   * `<psid>|<fhir id>` → its opaque id, once stored: a record's ids recur in every query of the
   * patient, and each costs an HMAC, a seal and a write. A purge ends the patient's service id,
   * so an entry never outlives what it stands for; a key rotation restarts the processes (and an
   * opaque id made under an older key still maps back: its FHIR id is sealed, not derived).
   */
  readonly #opaqueIds = new LRUCache<string, string>({ max: OPAQUE_IDS_KEPT });

  constructor({ redis, prefix, keys }: CrosswalkOptions) {
    this.#redis = redis;
    this.#space = prefix;
    this.#keys = keys;
  }

  /** The partition of a local id's lookup entry (0 without partitions). */
  #lookupPartition(localId: string): { lookup: string; partition: number } {
    const lookup = this.#keys.lookup(localId);
    const space = this.#space;
    return { lookup, partition: typeof space === 'string' ? 0 : space.indexOfLookup(lookup) };
  }

  #forward(localId: string): string {
    return this.#forwardOf(this.#lookupPartition(localId));
  }

  /**
   * The lookup entry of a local id under each key of the keyring, the sealing key's first (one
   * entry outside a key rotation): where an existing patient may be found.
   */
  #forwards(localId: string): string[] {
    const space = this.#space;
    return this.#keys.lookups(localId).map((lookup) =>
      this.#forwardOf({
        lookup,
        partition: typeof space === 'string' ? 0 : space.indexOfLookup(lookup),
      }),
    );
  }

  /** The first lookup entry of `localId` (sealing key first) that names a service id. */
  async #found(localId: string): Promise<{ forward: string; psid: string } | undefined> {
    for (const forward of this.#forwards(localId)) {
      const psid = await this.#serviceIdAt(forward);
      if (psid !== undefined) return { forward, psid };
    }
    return undefined;
  }

  #forwardOf({ lookup, partition }: { lookup: string; partition: number }): string {
    const space = this.#space;
    return `${typeof space === 'string' ? space : space.prefixAt(partition)}:xw:${lookup}`;
  }

  #reverse(patientServiceId: string): string {
    return `${patientPrefix(this.#space, patientServiceId)}:xwr:${patientServiceId}`;
  }

  /** A new random service id, in the partition of the local id's lookup entry. */
  #candidate(partition: number): string {
    const space = this.#space;
    if (typeof space === 'string' || space.count === 1) return randomUUID();
    return space.drawPatientId(partition);
  }

  /**
   * The service id of a local id, created (a random UUID) on first sight. During a key rotation an
   * entry under an older key is found first; a new one is created under the sealing key.
   */
  async resolve(localId: string): Promise<{ patientServiceId: string; created: boolean }> {
    if (this.#keys.lookups(localId).length > 1) {
      const found = await this.#found(localId);
      if (found !== undefined) return { patientServiceId: found.psid, created: false };
    }
    const {
      patientServiceId: candidate,
      forwardKey,
      reverseKey,
      sealedLocalId,
    } = this.plan(localId);
    const [patientServiceId, created] = (await RESOLVE.run(
      this.#redis,
      [forwardKey, reverseKey],
      [candidate, sealedLocalId],
    )) as [string, number];
    return { patientServiceId, created: created === 1 };
  }

  /**
   * What a script needs to create the entry of a local id together with other writes: the keys,
   * a candidate service id and the local id sealed for it. The entry is written only by that
   * script (see `UpdateCommitter`), and only if no entry exists by then.
   */
  plan(localId: string): CrosswalkPlan {
    const lookup = this.#lookupPartition(localId);
    const patientServiceId = this.#candidate(lookup.partition);
    return {
      patientServiceId,
      forwardKey: this.#forwardOf(lookup),
      reverseKey: this.#reverse(patientServiceId),
      sealedLocalId: this.#keys.seal(localId, `xw:${patientServiceId}`),
    };
  }

  /** The service id of a local id already seen (under any key of the keyring), without creating one. */
  async find(localId: string): Promise<string | undefined> {
    return (await this.#found(localId))?.psid;
  }

  /**
   * The key of a local id's lookup entry under the sealing key (named by the id's HMAC, in its
   * partition): where a new patient's entry is created, and what a commit script reads to check
   * that the entry still names a service id held in a cache.
   */
  lookupKeyOf(localId: string): string {
    return this.#forward(localId);
  }

  /**
   * The keys of a local id's lookup entry under each key of the keyring, the sealing key's first
   * ({@link lookupKeyOf}); one outside a key rotation.
   */
  lookupKeysOf(localId: string): string[] {
    return this.#forwards(localId);
  }

  /** The service id the lookup entry {@link lookupKeyOf} names (undefined when there is none). */
  async findByLookupKey(lookupKey: string): Promise<string | undefined> {
    return this.#serviceIdAt(lookupKey);
  }

  /** The service id a lookup entry names (undefined when there is none). */
  async #serviceIdAt(forwardKey: string): Promise<string | undefined> {
    return (await this.#redis.hget(forwardKey, 'psid')) ?? undefined;
  }

  /**
   * The key that names the service id a retired (merged) service id was merged into; written by the
   * merge's commit (see `UpdateCommitter`), never expires, holds no patient data (two random ids).
   */
  retiredKeyOf(patientServiceId: string): string {
    return `${patientPrefix(this.#space, patientServiceId)}:xwm:${patientServiceId}`;
  }

  /**
   * The service id updates of a local id go to: its own, or, once it was merged into another (HL7
   * A18/A34/A40/A47), the survivor's (followed through successive merges). Undefined when unseen.
   */
  async findCurrent(localId: string): Promise<string | undefined> {
    let patientServiceId = await this.find(localId);
    for (let hop = 0; patientServiceId !== undefined && hop < MAX_MERGE_HOPS; hop++) {
      const survivor = await this.#redis.get(this.retiredKeyOf(patientServiceId));
      if (survivor === null) return patientServiceId;
      patientServiceId = survivor;
    }
    return patientServiceId;
  }

  /**
   * Forgets a local id (a purge): its lookup entry and its sealed copy. Returns the service id it
   * stood for, or undefined when the local id was not known. A later `resolve` of the same local
   * id creates a new service id: to the service, a new patient.
   */
  async remove(localId: string): Promise<string | undefined> {
    // Under every key of the keyring (during a rotation an entry may be under an older one).
    let removed: string | undefined;
    for (const forward of this.#forwards(localId)) {
      removed ??= await this.#removeAt(forward);
    }
    return removed;
  }

  async #removeAt(forward: string): Promise<string | undefined> {
    for (;;) {
      const patientServiceId = await this.#serviceIdAt(forward);
      if (patientServiceId === undefined) return undefined;
      const reverse = this.#reverse(patientServiceId);
      if (
        forward.slice(0, forward.indexOf(':xw:')) !== reverse.slice(0, reverse.indexOf(':xwr:'))
      ) {
        // In two partitions (partitions changed, or keys rotated, since the entry was made): the
        // sealed copy goes first, so that a purge interrupted in between still finds the patient
        // through the lookup entry when it runs again.
        await this.#redis.del(reverse);
        if ((await REMOVE_FORWARD.run(this.#redis, [forward], [patientServiceId])) === 1) {
          return patientServiceId;
        }
        continue;
      }
      const removed = await REMOVE.run(this.#redis, [forward, reverse], [patientServiceId]);
      if (removed === 1) return patientServiceId;
    }
  }

  /**
   * The id Prevent registered the patient under (its `patient_service_id`, which this project
   * calls `prevent_patient_id` to keep it apart from our own patient service id): a field of the
   * local id's lookup entry, beside our own service id, sealed and bound to our service id.
   * Undefined when the patient was never registered with Prevent (or the entry no longer names
   * `patientServiceId`).
   */
  async preventPatientIdOf(localId: string, patientServiceId: string): Promise<string | undefined> {
    for (const forward of this.#forwards(localId)) {
      const [psid, sealed] = await this.#redis.hmget(forward, 'psid', PREVENT_PATIENT_ID);
      if (psid !== patientServiceId) continue;
      if (sealed == null) return undefined;
      return this.#keys.open(sealed, preventContext(patientServiceId)).toString('utf8');
    }
    return undefined;
  }

  /**
   * Keeps the id Prevent answered a registration with (see {@link preventPatientIdOf}), only if the
   * lookup entry still names `patientServiceId` (a purge or a re-created patient wins). True when
   * it was kept.
   */
  async keepPreventPatientId(
    localId: string,
    patientServiceId: string,
    preventPatientId: string,
  ): Promise<boolean> {
    const sealed = this.#keys.seal(preventPatientId, preventContext(patientServiceId));
    // On the entry that names the patient, under whichever key it is (a key rotation).
    for (const forward of this.#forwards(localId)) {
      const kept = await SET_IF_NAMED.run(
        this.#redis,
        [forward],
        [patientServiceId, PREVENT_PATIENT_ID, sealed],
      );
      if (kept === 1) return true;
    }
    return false;
  }

  /** The local id behind a service id (for results handed back to the hospital). */
  async localIdOf(patientServiceId: string): Promise<string | undefined> {
    return this.openLocalId(
      patientServiceId,
      await this.#redis.get(this.#reverse(patientServiceId)),
    );
  }

  /** The local id from its sealed value (`xwr:<psid>`) as a script read it. */
  openLocalId(patientServiceId: string, sealed: string | null | undefined): string | undefined {
    if (sealed == null || sealed === '') return undefined;
    return this.#keys.open(sealed, `xw:${patientServiceId}`).toString('utf8');
  }

  /**
   * An opaque stand-in for a FHIR reference (`Condition/abc` -> `ref-…`), stable per patient,
   * that {@link fhirIdOf} maps back.
   */
  async opaqueFhirId(patientServiceId: string, fhirId: string): Promise<string> {
    const cacheKey = `${patientServiceId}|${fhirId}`;
    const known = this.#opaqueIds.get(cacheKey);
    if (known !== undefined) return known;
    const opaque = `ref-${this.#keys.lookup(cacheKey).slice(0, 22)}`;
    await this.#redis.hsetnx(
      `${patientPrefix(this.#space, patientServiceId)}:fhir:${patientServiceId}`,
      opaque,
      this.#keys.seal(fhirId, `fhir:${patientServiceId}`),
    );
    this.#opaqueIds.set(cacheKey, opaque);
    return opaque;
  }

  async fhirIdOf(patientServiceId: string, opaque: string): Promise<string | undefined> {
    const sealed = await this.#redis.hget(
      `${patientPrefix(this.#space, patientServiceId)}:fhir:${patientServiceId}`,
      opaque,
    );
    if (sealed === null) return undefined;
    return this.#keys.open(sealed, `fhir:${patientServiceId}`).toString('utf8');
  }
}
