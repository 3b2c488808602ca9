import { queryJobId } from './query-job.ts';
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
  /** @defaultValue 2000 */
  debounceMs: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * Opens queries for producers that store no record themselves (the bench, tests): one open query
 * per (patient, category), due once the debounce window of its first update has passed, run on
 * the newest record at that moment. Ingest does the same inside its one script per message
 * (`UpdateCommitter`), together with the record.
 */
export class QueryScheduler {
  readonly #state: QueryState;
  readonly #debounceMs: number;
  readonly #now: () => number;

  constructor({ state, debounceMs, now = Date.now }: QuerySchedulerOptions) {
    this.#state = state;
    this.#debounceMs = debounceMs;
    this.#now = now;
  }

  /** Resolves once the query is durable in Redis (in the due set of new queries, see query-outbox.ts). */
  async schedule(
    patientServiceId: string,
    ccsrCategory: string,
    trigger: Trigger,
  ): Promise<ScheduledQuery> {
    const { seq, coalesced } = await this.#state.schedule(
      patientServiceId,
      ccsrCategory,
      trigger,
      this.#now() + this.#debounceMs,
    );
    return {
      ccsr_category: ccsrCategory,
      job_id: queryJobId(patientServiceId, ccsrCategory, seq),
      coalesced,
    };
  }
}
