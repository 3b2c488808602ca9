import type { JobType, Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import type { PatientEraser } from './patient-eraser.ts';

/** States whose jobs are erased: all but `active` (a worker holds it). A paused queue's jobs wait. */
const STATES: readonly JobType[] = ['waiting', 'delayed', 'prioritized', 'completed', 'failed'];

/** Jobs read per round trip. */
const PAGE = 500;

const byServiceId = (data: unknown): unknown =>
  typeof data === 'object' && data !== null
    ? (data as { patient_service_id?: unknown }).patient_service_id
    : undefined;

/**
 * Erases a patient's jobs from a queue whose job ids do not name the patient (the outbound results
 * queue: one job per result event, id = event id), by reading each job's data. It walks every job
 * the queue keeps (bounded by the queue's retention), so it costs one pass over the queue.
 */
export class QueueJobEraser implements PatientEraser {
  readonly name: string;
  readonly #queue: Queue;
  readonly #redis: RedisClient;
  readonly #patientOf: (data: unknown) => unknown;

  /**
   * @param redis - a connection to read the jobs' data with (one pipeline per page).
   * @param patientOf - the service id a job's data belongs to.
   * @defaultValue `data.patient_service_id` (a result event)
   */
  constructor(
    name: string,
    queue: Queue,
    redis: RedisClient,
    patientOf: (data: unknown) => unknown = byServiceId,
  ) {
    this.name = name;
    this.#queue = queue;
    this.#redis = redis;
    this.#patientOf = patientOf;
  }

  async #belongs(raw: unknown, patientServiceId: string): Promise<boolean> {
    // Most jobs are someone else's: a text search first spares parsing them.
    if (typeof raw !== 'string' || !raw.includes(patientServiceId)) return false;
    try {
      return this.#patientOf(JSON.parse(raw)) === patientServiceId;
    } catch {
      return false;
    }
  }

  async erase(patientServiceId: string): Promise<number> {
    const ids: string[] = [];
    for (const state of STATES) {
      for (let start = 0; ; start += PAGE) {
        const page = await this.#queue.getRanges([state], start, start + PAGE - 1, true);
        const pipeline = this.#redis.pipeline();
        for (const id of page) pipeline.hget(this.#queue.toKey(id), 'data');
        const data = page.length === 0 ? [] : ((await pipeline.exec()) ?? []);
        for (const [i, id] of page.entries()) {
          if (await this.#belongs(data[i]?.[1], patientServiceId)) ids.push(id);
        }
        if (page.length < PAGE) break;
      }
    }
    let removed = 0;
    for (const id of ids) removed += (await this.#queue.remove(id)) === 1 ? 1 : 0;
    return removed;
  }
}
