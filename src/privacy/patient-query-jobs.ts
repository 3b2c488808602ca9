import type { Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import { pollSetKey } from '../queries/poll-set.ts';
import { removeDueQueriesOf, removeMembersOf } from '../queries/query-outbox.ts';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import { globLiteral, scanKeys } from './redis-keys.ts';

/** Job states in which a query has not started: removing the job means it never runs. */
const NOT_STARTED = new Set(['waiting', 'delayed', 'prioritized', 'paused', 'waiting-children']);

/** Queue events read per round trip when looking for a patient's job ids. */
const PAGE = 1_000;

export interface PatientQueryJobsOptions {
  redis: RedisClient;
  /** A prefix, or the partitions: a patient's queries are in its partition's due set and queue. */
  prefix: KeySpace;
  /** The query queue (`concordance-queries`) of each partition (index = partition). */
  queues: readonly Queue[];
}

export interface RemovedQueryJobs {
  /** Jobs removed. */
  removed: number;
  /** Jobs a worker holds right now (locked): they cannot be removed and run to their end. */
  inFlight: number;
}

/**
 * A patient's jobs in the query queue. Query job ids are `q-${patientServiceId}-${category}-${seq}`
 * (see `queryJobId`), so they are found by their keys (`SCAN`), whatever state they are in.
 */
export class PatientQueryJobs {
  readonly #redis: RedisClient;
  readonly #queues: readonly Queue[];
  readonly #space: KeySpace;

  constructor({ redis, prefix, queues }: PatientQueryJobsOptions) {
    this.#redis = redis;
    this.#space = prefix;
    this.#queues = queues;
  }

  /** The patient's partition's prefix, query queue, and the queue's key base. */
  #of(patientServiceId: string): { prefix: string; queue: Queue; base: string } {
    const space = this.#space;
    const index = typeof space === 'string' ? 0 : space.indexOf(patientServiceId);
    const queue = this.#queues[index];
    if (queue === undefined) throw new RangeError(`no query queue for partition ${index}`);
    const prefix = patientPrefix(space, patientServiceId);
    return { prefix, queue, base: `${prefix}:${queue.name}:` };
  }

  /** The ids of every job of the patient the queue still holds, in any state. */
  async ids(patientServiceId: string): Promise<string[]> {
    const { base } = this.#of(patientServiceId);
    const keys = await scanKeys(
      this.#redis,
      `${globLiteral(base)}q-${globLiteral(patientServiceId)}-*`,
    );
    // A job's keys are its hash and `:logs`, `:lock`…: the id is what comes before a colon.
    return [...new Set(keys.map((key) => key.slice(base.length).split(':')[0] ?? ''))]
      .filter((id) => id !== '')
      .sort();
  }

  /**
   * Removes the patient's queries from the due sets (of new queries and of polls), and its jobs: `not_started` only those that have not begun (an opt-out), `all`
   * also finished ones, whose data and results the queue keeps for a while (a purge). A job a
   * worker holds is left to end; it is counted in `inFlight`.
   */
  async remove(patientServiceId: string, which: 'not_started' | 'all'): Promise<RemovedQueryJobs> {
    // Queries ingest opened that no worker has queued yet (the due set) never start either.
    const { prefix, queue } = this.#of(patientServiceId);
    let removed = await removeDueQueriesOf(this.#redis, prefix, patientServiceId);
    // Submitted queries waiting for a poll are not polled again (nor is their result delivered).
    removed += await removeMembersOf(this.#redis, pollSetKey(prefix), patientServiceId);
    let inFlight = 0;
    for (const id of await this.ids(patientServiceId)) {
      const state = await queue.getJobState(id);
      if (state === 'unknown') continue;
      if (which === 'not_started' && !NOT_STARTED.has(state)) {
        if (state === 'active') inFlight += 1;
        continue;
      }
      if ((await queue.remove(id)) === 1) removed += 1;
      else inFlight += 1;
    }
    return { removed, inFlight };
  }

  /**
   * Deletes the queue's event-stream entries that name a job of the patient (`added`, `removed`…:
   * BullMQ keeps up to 10,000 of them). Returns how many were deleted.
   */
  async forgetEvents(patientServiceId: string): Promise<number> {
    const stream = `${this.#of(patientServiceId).base}events`;
    const marker = `q-${patientServiceId}-`;
    let start = '-';
    let deleted = 0;
    for (;;) {
      const page = await this.#redis.xrange(stream, start, '+', 'COUNT', PAGE);
      const hits = page
        .filter(([, fields]) => fields.some((value) => value.includes(marker)))
        .map(([id]) => id);
      if (hits.length > 0) deleted += await this.#redis.xdel(stream, ...hits);
      if (page.length < PAGE) return deleted;
      start = `(${page[page.length - 1]?.[0] ?? ''}`;
    }
  }
}
