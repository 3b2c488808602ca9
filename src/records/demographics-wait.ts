import { LuaScript } from '../queues/lua-script.ts';
import { allPrefixes, patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';

/**
 * Adds (patient, category) to the waiting set unless it is there (its first wait counts), and
 * raises the newest waiting query's seq; returns {first wait (ms), newest waiting seq}.
 */
const PARK = LuaScript.load(new URL('./lua/park.lua', import.meta.url));

/** Removes one member (its wait ended): one EVALSHA, no MULTI (see `release`). */
const RELEASE = LuaScript.load(new URL('./lua/release.lua', import.meta.url));

/** Removes every member of one patient (a purge). */
const ERASE_PATIENT = LuaScript.load(new URL('./lua/erase-patient.lua', import.meta.url));

/** The failure code of a query that waited for a birth date longer than allowed. */
export const RECORD_WAITING_EXPIRED = 'ERR_RECORD_WAITING_EXPIRED';

/** What {@link DemographicsWait.park} decides for the query that asks. */
export type WaitDecision =
  /** Wait (the job is delayed until `until`); a later update's query takes over. */
  | { kind: 'wait'; until: number }
  /** A newer query of the same key waits in this one's place: end without an event. */
  | { kind: 'replaced' }
  /** Waited `waitMs` since the first try: end `failed` (ERR_RECORD_WAITING_EXPIRED). */
  | { kind: 'expired' };

/**
 * Queries of records that cannot be assembled yet because the patient's birth date is missing
 * (a Condition came before the Patient): per (patient, category), when the first one began to wait,
 * and the newest waiting query. A query that waits is delayed, not ended: the next update of the
 * patient opens a new query that runs as soon as the birth date is there (and supersedes it); a key
 * still waiting after `waitMs` ends `failed` once. Counted by `status` and
 * `cw_queries_waiting_for_demographics`. Also a purge's eraser (`erase`): its keys are removed
 * by a scan of the waiting set, which holds only keys that wait.
 */
export class DemographicsWait {
  readonly name = 'waiting_for_demographics';
  readonly #redis: RedisClient;
  readonly #space: KeySpace;

  /** `prefix`: a prefix, or the partitions (each partition has its waiting set). */
  constructor(options: { redis: RedisClient; prefix: KeySpace }) {
    this.#redis = options.redis;
    this.#space = options.prefix;
  }

  /** The waiting set and the seq hash of a patient's partition. */
  #keys(patientServiceId: string): [zset: string, hash: string] {
    const prefix = patientPrefix(this.#space, patientServiceId);
    return [`${prefix}:waitdemo`, `${prefix}:waitdemo:seq`];
  }

  static member(patientServiceId: string, category: string): string {
    return `${patientServiceId}|${category}`;
  }

  /** Records that query `seq` of the key waits, and says what it should do. */
  async park(
    patientServiceId: string,
    category: string,
    seq: number,
    now: number,
    waitMs: number,
  ): Promise<WaitDecision> {
    const member = DemographicsWait.member(patientServiceId, category);
    const [first, newest] = (await PARK.run(this.#redis, this.#keys(patientServiceId), [
      member,
      now,
      seq,
    ])) as [string, number];
    if (newest > seq) return { kind: 'replaced' };
    const until = Number(first) + waitMs;
    if (now >= until) {
      await this.release(patientServiceId, category);
      return { kind: 'expired' };
    }
    return { kind: 'wait', until };
  }

  /** The key no longer waits (its record could be assembled, or its wait ended). */
  async release(patientServiceId: string, category: string): Promise<void> {
    const member = DemographicsWait.member(patientServiceId, category);
    const [zset, hash] = this.#keys(patientServiceId);
    await RELEASE.run(this.#redis, [zset, hash], [member]);
  }

  /** (patient, category) keys waiting now. */
  async count(): Promise<number> {
    const counts = await Promise.all(
      allPrefixes(this.#space).map((prefix) => this.#redis.zcard(`${prefix}:waitdemo`)),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /** A purge: the patient's keys wait no more. */
  async erase(patientServiceId: string): Promise<number> {
    return (await ERASE_PATIENT.run(this.#redis, this.#keys(patientServiceId), [
      `${patientServiceId}|`,
    ])) as number;
  }
}
