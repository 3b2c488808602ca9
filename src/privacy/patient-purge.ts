import type { RedisClient } from '../queues/redis-client.ts';
import type { Crosswalk } from '../identity/crosswalk.ts';
import type { PatientConsent } from './patient-consent.ts';
import type { PatientEraser } from './patient-eraser.ts';
import type { PatientQueryJobs } from './patient-query-jobs.ts';
import { PatientTraceEraser } from './patient-trace-eraser.ts';
import { globLiteral, scanKeys } from './redis-keys.ts';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';

export interface PatientPurgeOptions {
  redis: RedisClient;
  /** A prefix, or the partitions (a patient's keys are its partition's). */
  prefix: KeySpace;
  crosswalk: Crosswalk;
  consent: PatientConsent;
  queryJobs: PatientQueryJobs;
  /**
   * Other holders of the patient's data, erased in the same purge (pending webhook events and dead
   * letters). @defaultValue none
   */
  erasers?: readonly PatientEraser[];
}

/** What a purge removed, by kind; and what it kept on purpose. */
export interface PurgeResult {
  patientServiceId: string;
  /**
   * `record` (0/1), `presets` (registered presets), `fhir_ids` (opaque FHIR references),
   * `query_states` and `change_states` (keys), `query_jobs` (queue jobs removed),
   * `queries_in_flight` (jobs a worker held: they end on their own), `queue_events` (queue event
   * entries naming the patient's jobs), `idempotency` (remembered answers to its updates),
   * `crosswalk` (0/1), `trace` (message trace entries: receipts, index, query and delivery
   * traces), one count per eraser by its name.
   */
  counts: Record<string, number>;
  /** `["crosswalk", "opt_out"]` for an opted-out patient (see {@link PatientPurge}), else `[]`. */
  kept: string[];
}

/**
 * Removes everything stored about a patient: record, presets, opaque FHIR ids, query state,
 * change-detection state, the patient's query jobs and their queue events, the remembered answers
 * to its updates, its message trace (receipts, index, query and delivery traces), what the `erasers` hold, and the crosswalk entry. Idempotent: a purge that stopped half-way (a crash) is completed
 * by running it again, because the crosswalk entry, through which the patient is found, goes last.
 *
 * After a purge, a new update of the same local id is a new patient (a new patient_service_id,
 * no presets, no history). An opted-out patient is the exception: the crosswalk entry (the local
 * id sealed) and the opt-out flag are kept, so that later updates still map to the opted-out
 * patient and schedule no query. To erase those too, opt the patient in, then purge.
 */
export class PatientPurge {
  readonly #redis: RedisClient;
  readonly #prefix: KeySpace;
  readonly #crosswalk: Crosswalk;
  readonly #consent: PatientConsent;
  readonly #queryJobs: PatientQueryJobs;
  readonly #erasers: readonly PatientEraser[];
  readonly #trace: PatientTraceEraser;

  constructor({ redis, prefix, crosswalk, consent, queryJobs, erasers = [] }: PatientPurgeOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#crosswalk = crosswalk;
    this.#consent = consent;
    this.#queryJobs = queryJobs;
    this.#erasers = erasers;
    this.#trace = new PatientTraceEraser({ redis, prefix });
  }

  /** Purges the patient of `localId`; undefined when the crosswalk does not know it. */
  async purge(localId: string): Promise<PurgeResult | undefined> {
    const patientServiceId = await this.#crosswalk.find(localId);
    if (patientServiceId === undefined) return undefined;
    const counts: Record<string, number> = {};
    const add = (name: string, n: number) => {
      counts[name] = (counts[name] ?? 0) + n;
    };

    // Jobs first: a job removed cannot re-create query state after it is deleted.
    const jobs = await this.#queryJobs.remove(patientServiceId, 'all');
    add('query_jobs', jobs.removed);
    add('queries_in_flight', jobs.inFlight);
    await this.#eraseStored(patientServiceId, add);
    for (const eraser of this.#erasers) add(eraser.name, await eraser.erase(patientServiceId));

    const optedOut = await this.#consent.isOptedOut(patientServiceId);
    add('crosswalk', 0);
    if (!optedOut && (await this.#crosswalk.remove(localId)) !== undefined) add('crosswalk', 1);
    // A second pass: an update accepted while the first one ran may have stored something since.
    await this.#eraseStored(patientServiceId, add);
    add('queue_events', await this.#queryJobs.forgetEvents(patientServiceId));
    add('idempotency', await this.#forgetAnswers(patientServiceId));
    return { patientServiceId, counts, kept: optedOut ? ['crosswalk', 'opt_out'] : [] };
  }

  /**
   * Deletes the remembered answers to the patient's updates (`idem:*`, keyed by a digest of the
   * event id, holding the 202 answer and so the service id; they would expire within
   * `ingest.idempotency_ttl_s`). A resent update then counts as new, for the new patient it makes.
   */
  async #forgetAnswers(patientServiceId: string): Promise<number> {
    const prefix = patientPrefix(this.#prefix, patientServiceId);
    const keys = await scanKeys(this.#redis, `${globLiteral(prefix)}:idem:*`);
    let deleted = 0;
    for (let i = 0; i < keys.length; i += 500) {
      const batch = keys.slice(i, i + 500);
      const pipeline = this.#redis.pipeline();
      for (const key of batch) pipeline.get(key);
      const values = (await pipeline.exec()) ?? [];
      // A value of another type (an error here) is judged by its key name alone.
      const hits = batch.filter((key, j) => {
        const value = values[j]?.[1];
        return (
          key.includes(patientServiceId) ||
          (typeof value === 'string' && value.includes(patientServiceId))
        );
      });
      if (hits.length > 0) deleted += await this.#redis.del(...hits);
    }
    return deleted;
  }

  /** Deletes the keys named after the service id; counts what they held. */
  async #eraseStored(
    patientServiceId: string,
    add: (name: string, n: number) => void,
  ): Promise<void> {
    const p = patientPrefix(this.#prefix, patientServiceId);
    const psid = globLiteral(patientServiceId);
    const hashes: [string, string][] = [
      ['presets', `${p}:presets:${patientServiceId}`],
      ['fhir_ids', `${p}:fhir:${patientServiceId}`],
    ];
    for (const [name, key] of hashes) {
      const [[, held], [, deleted]] = (await this.#redis.multi().hlen(key).del(key).exec()) as [
        [null, number],
        [null, number],
      ];
      add(name, deleted === 1 ? held : 0);
    }
    add('record', await this.#redis.del(`${p}:rec:${patientServiceId}`));
    const scanned: [string, string][] = [
      ['query_states', `${globLiteral(p)}:qs:${psid}:*`],
      ['change_states', `${globLiteral(p)}:delivery:last:${psid}/*`],
    ];
    for (const [name, pattern] of scanned) {
      const keys = await scanKeys(this.#redis, pattern);
      add(name, keys.length === 0 ? 0 : await this.#redis.del(...keys));
    }
    add('trace', await this.#trace.erase(patientServiceId));
  }
}
