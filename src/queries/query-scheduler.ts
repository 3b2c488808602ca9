import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { queryJobId, type QueryJobData } from './query-job.ts';
import type { QueryState, Trigger } from './query-state.ts';

export interface ScheduledQuery {
  ccsr_category: string;
  /** The queue job that will run the query. */
  job_id: string;
  /** True when the update joined a query that an earlier update opened. */
  coalesced: boolean;
}

export interface QuerySchedulerOptions {
  state: QueryState;
  queue: Queue;
  /** @defaultValue 2000 */
  debounceMs: number;
}

/**
 * Turns a record update into queries: one open query per (patient, category), run once the
 * debounce window of its first update has passed, on the newest record at that moment.
 */
export class QueryScheduler {
  readonly #state: QueryState;
  readonly #queue: Queue;
  readonly #debounceMs: number;

  constructor({ state, queue, debounceMs }: QuerySchedulerOptions) {
    this.#state = state;
    this.#queue = queue;
    this.#debounceMs = debounceMs;
  }

  /**
   * Resolves once the query is durable in Redis. The job is added even for a coalesced update:
   * BullMQ ignores an id it already holds, and a job lost between the state change and its add
   * (a crash) is thereby re-created by the next update.
   */
  async schedule(
    patientServiceId: string,
    ccsrCategory: string,
    trigger: Trigger,
  ): Promise<ScheduledQuery> {
    const { seq, coalesced } = await this.#state.schedule(patientServiceId, ccsrCategory, trigger);
    const jobId = queryJobId(patientServiceId, ccsrCategory, seq);
    const data: QueryJobData = {
      queryId: randomUUID(),
      patientServiceId,
      ccsrCategory,
      seq,
      step: 'scheduled',
      polls: 0,
      resubmits: 0,
    };
    await this.#queue.add('query', data, { jobId, delay: this.#debounceMs });
    return { ccsr_category: ccsrCategory, job_id: jobId, coalesced };
  }
}
