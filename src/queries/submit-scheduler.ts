import { randomUUID } from 'node:crypto';
import { isPreventPreset } from '../ccsr/preset-names.ts';
import { DueSetLoop, type DueSetSchedulerOptions } from './due-set-loop.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import type { AssembledPatient } from '../interface/assembled-patient.ts';
import type { WaitDecision } from '../records/demographics-wait.ts';
import { adaptiveDelayMs } from './adaptive-schedule.ts';
import type { ClaimedQuery, DueQueries, DueWrite } from './due-queries.ts';
import type { ResultErrorCode } from './result-error-codes.ts';
import type { PolledRemoteJob } from './poll-set.ts';
import {
  decideBeforeSubmit,
  decideStalled,
  decideSubmitFailure,
  type EndDecision,
  type ForgetDecision,
  type SubmitFailure,
} from './query-lifecycle.ts';
import { queryJobId, type QueryJobData } from './query-job.ts';
import { logQueryEnd, resultEvent } from './query-outcome.ts';

/** What the adapter could make of a claimed query's record. */
export type Prepared =
  | { kind: 'payload'; payload: AssembledPatient; recordVersion: number }
  /**
   * A query the service answers at once (Prevent): `call` makes its requests and resolves with
   * the answer, which ends the query `completed` (no remote job, no poll); it throws the service's
   * errors, which the lifecycle handles as a submission's.
   */
  | {
      kind: 'call';
      call: (signal: AbortSignal) => Promise<Record<string, unknown>>;
      recordVersion: number;
    }
  /** No record (or no local id): the query ends rejected. */
  | { kind: 'missing' };

/** A prepared query about to be sent. */
type ToSend = { query: ClaimedQuery } & Exclude<Prepared, { kind: 'missing' }>;

/** The ports the submission side works through. */
export interface SubmitPorts {
  /**
   * Opens, assembles and strips the claimed query's record for the service (throws the record's
   * errors: not assemblable, an identifier leak).
   */
  prepare(query: ClaimedQuery): Promise<Prepared>;
  /** POSTs the query; throws the service's errors. */
  submit(payload: AssembledPatient, category: string, signal: AbortSignal): Promise<string>;
  /** Classifies a failure of `prepare` or `submit`; `undefined` for one nobody expected. */
  classify(err: unknown): SubmitFailure | undefined;
  /** True when a failed submission may have reached the service (a timeout, a reset). */
  mayHaveReached(err: unknown): 'timeout' | 'connection_lost' | undefined;
  /** Stores the remote job and the first poll, in one step, as soon as the POST answered. */
  submitted(query: ClaimedQuery, remote: PolledRemoteJob, firstPollAt: number): Promise<void>;
  /** The record has no birth date yet: wait for it (see DemographicsWait). */
  park(query: ClaimedQuery, now: number): Promise<WaitDecision>;
  /** Hands ended queries' results to the delivery side, all at once. */
  deliver(events: ResultEvent[]): Promise<void>;
  /** The service refused the API key: pause the partition's queries. */
  pauseForAuth(): Promise<void>;
  /** The hospital's id of the patient, from the claim's sealed value. */
  localIdOf(query: ClaimedQuery): string | undefined;
}

/** How a query ended on the submission side (for tests and metrics). */
export interface SubmitOutcome {
  data: QueryJobData;
  decision: EndDecision | ForgetDecision;
  eventId: string | null;
}

export interface SubmitSchedulerOptions extends DueSetSchedulerOptions<SubmitOutcome> {
  due: DueQueries;
  ports: SubmitPorts;
  /** `queries.submit_backoff_ms`: the first retry's delay (doubled per attempt, ±20 %). */
  backoffMs: number;
  /** `queries.demographics_wait_s` (for the failure message). */
  demographicsWaitS: number;
  /**
   * `queries.dispatch`: every `interval_ms` up to `batch` due queries are claimed, leased for
   * `lease_ms`; `concurrency`: submissions in flight at most (`queries.concurrency`).
   */
  claiming: { interval_ms: number; batch: number; lease_ms: number; concurrency: number };
  /** @defaultValue `Math.random` */
  random?: () => number;
}

/** The query's data as a result event needs it. */
function dataOf(query: ClaimedQuery, extra: Partial<QueryJobData> = {}): QueryJobData {
  return {
    queryId: query.queryId,
    patientServiceId: query.patientServiceId,
    ccsrCategory: query.ccsrCategory,
    seq: query.seq,
    step: 'submitting',
    triggers: query.triggers,
    polls: 0,
    resubmits: query.resubmits,
    ...extra,
  };
}

/** Ends `query` with `decision`: its event (if any) to deliver, its claim to forget. */
function endQuery(
  ended: Ended[],
  writes: DueWrite[],
  query: ClaimedQuery,
  decision: EndDecision | ForgetDecision,
  extra: Partial<QueryJobData> = {},
): void {
  ended.push({ query, data: dataOf(query, extra), decision });
  writes.push({ kind: 'end', query });
}

/** An end `failed` with `code`. */
function failedWith(code: ResultErrorCode, message: string): EndDecision {
  return { kind: 'end', outcome: 'failed', countAs: 'failed', failure: { code, message } };
}

const RECORD_MISSING: EndDecision = {
  kind: 'end',
  outcome: 'rejected',
  countAs: 'rejected',
  failure: { code: 'ERR_RECORD_MISSING', message: 'no record is stored for this patient' },
};

interface Ended {
  query: ClaimedQuery;
  data: QueryJobData;
  decision: EndDecision | ForgetDecision;
}

/**
 * Submits the due queries of one partition: every tick one script claims up to a batch of due
 * queries together with what their submission needs (see DueQueries), the payloads are prepared,
 * one script marks the batch's submissions begun, the POSTs go out concurrently, and each remote
 * job is stored (with its first poll) as soon as its POST answers — never held back for the rest
 * of the batch, so the window in which a crash sends a query twice stays the POST's round trip
 * plus one write. Ended queries are handed to the delivery side in one call and every other
 * outcome (retry, wait, hold) is written back with one script. A worker that dies leaves its
 * claims leased: they come due again after `lease_ms`.
 */
export class SubmitScheduler extends DueSetLoop<ClaimedQuery> {
  readonly #o: SubmitSchedulerOptions;
  readonly #now: () => number;
  readonly #random: () => number;

  constructor(options: SubmitSchedulerOptions) {
    super(options, options.claiming, {
      failing:
        'due queries could not be claimed or written; their claims run out and they come due again',
      recovered: 'due queries are being claimed again',
    });
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#random = options.random ?? Math.random;
  }

  /** Claims up to `limit` due queries, leased for `lease_ms`, with what their submission needs. */
  protected take(limit: number, now: number): Promise<ClaimedQuery[]> {
    const ids = Array.from({ length: limit }, () => randomUUID());
    return this.#o.due.claim(now, now + this.#o.claiming.lease_ms, ids);
  }

  /** How full the partition's due set of new queries is (for the gauges). */
  depth(now: number): ReturnType<DueQueries['depth']> {
    return this.#o.due.depth(now);
  }

  protected async run(claimed: ClaimedQuery[]): Promise<void> {
    const { rules, ports } = this.#o;
    const ended: Ended[] = [];
    const writes: DueWrite[] = [];
    const toSend: ToSend[] = [];
    const end = (query: ClaimedQuery, decision: EndDecision | ForgetDecision) =>
      endQuery(ended, writes, query, decision);
    await Promise.all(
      claimed.map(async (query) => {
        // What ends a query without sending it comes first (a superseded query ends without an
        // event, as on the poll side); then one whose workers kept dying with it.
        const before =
          decideBeforeSubmit(
            {
              optedOut: query.optedOut,
              superseded: query.submitted > query.seq,
              hasRecord: query.record.version !== null && query.sealedLocalId !== null,
            },
            rules,
          ) ?? decideStalled(query.leases, rules);
        if (before !== undefined) {
          end(query, before);
          return;
        }
        try {
          const prepared = await ports.prepare(query);
          if (prepared.kind === 'missing') end(query, RECORD_MISSING);
          else toSend.push({ query, ...prepared });
        } catch (err) {
          await this.#afterFailure(query, err, undefined, ended, writes);
        }
      }),
    );
    const begun = await this.#o.due.begin(toSend.map(({ query }) => query));
    await Promise.all(
      toSend.map(async (item, i) => {
        const answer = begun[i];
        if (item.kind === 'call') {
          if (answer?.state === 'interrupted') {
            this.#o.metrics?.possibleDuplicates.inc({ reason: 'worker_restart' });
          }
          await this.#call(item, ended, writes);
          return;
        }
        if (answer?.state === 'stored') {
          // An earlier run stored the remote job and died before the claim was written back.
          await ports.submitted(item.query, answer.remote, this.#now());
          return;
        }
        if (answer?.state === 'interrupted') {
          this.#o.metrics?.possibleDuplicates.inc({ reason: 'worker_restart' });
        }
        await this.#send(item, ended, writes);
      }),
    );
    await this.#finish(ended, writes);
  }

  /** Makes a query's call (Prevent): its answer ends the query at once, `completed`. */
  async #call(
    item: Extract<ToSend, { kind: 'call' }>,
    ended: Ended[],
    writes: DueWrite[],
  ): Promise<void> {
    const { query, recordVersion } = item;
    let recommendations: Record<string, unknown>;
    try {
      recommendations = await item.call(this.signal);
    } catch (err) {
      await this.#afterFailure(query, err, recordVersion, ended, writes);
      return;
    }
    const completed: EndDecision = {
      kind: 'end',
      outcome: 'completed',
      countAs: 'completed',
      recommendations,
    };
    endQuery(ended, writes, query, completed, { recordVersion });
  }

  async #send(
    item: Extract<ToSend, { kind: 'payload' }>,
    ended: Ended[],
    writes: DueWrite[],
  ): Promise<void> {
    const { query } = item;
    const sentAt = this.#now();
    let remoteJobId: string;
    try {
      remoteJobId = await this.#o.ports.submit(item.payload, query.ccsrCategory, this.signal);
    } catch (err) {
      await this.#afterFailure(query, err, item.recordVersion, ended, writes);
      return;
    }
    const submittedAt = this.#now();
    const remote: PolledRemoteJob = {
      remoteJobId,
      submittedAt,
      resubmits: query.resubmits,
      recordVersion: item.recordVersion,
      queryId: query.queryId,
      polls: 0,
    };
    const profile = this.#o.profiles.get(query.ccsrCategory);
    const firstPollAt = submittedAt + adaptiveDelayMs(0, 0, profile, this.#o.schedule);
    await this.#o.ports.submitted(query, remote, firstPollAt);
    this.#o.metrics?.submitWindow.observe((submittedAt - sentAt) / 1_000);
    if (this.#o.logger.isLevelEnabled('info')) {
      this.#o.logger.info(
        {
          query_key: `${query.patientServiceId}/${query.ccsrCategory}`,
          job_id: queryJobId(query.patientServiceId, query.ccsrCategory, query.seq),
          query_id: query.queryId,
          remote_job_id: remoteJobId,
          record_version: item.recordVersion,
          queued_ms: submittedAt - query.dueAt,
        },
        'query submitted',
      );
    }
  }

  /** Carries out what the lifecycle decides for a failed preparation or submission. */
  async #afterFailure(
    query: ClaimedQuery,
    err: unknown,
    recordVersion: number | undefined,
    ended: Ended[],
    writes: DueWrite[],
  ): Promise<void> {
    const { ports, rules } = this.#o;
    const now = this.#now();
    const extra = recordVersion === undefined ? {} : { recordVersion };
    const failure = ports.classify(err);
    if (failure === undefined) {
      const e = err as Error;
      this.#o.logger.error(
        {
          query_key: `${query.patientServiceId}/${query.ccsrCategory}`,
          err: { name: e.name, message: e.message },
        },
        'query ended on an unexpected error',
      );
      const internal = `the query ended on an internal error (${e.name})`;
      endQuery(ended, writes, query, failedWith('ERR_QUERY_INTERNAL', internal), extra);
      return;
    }
    const decision = decideSubmitFailure(failure, query.failures + 1, rules, now);
    const answered = failure.kind !== 'birth_date_missing' && failure.kind !== 'refused';
    switch (decision.kind) {
      case 'end':
        endQuery(ended, writes, query, decision, extra);
        return;
      case 'hold':
        if (decision.reason === 'auth_refused') await ports.pauseForAuth();
        else {
          await this.#o.due.hold(decision.ms, 'rate_limited');
          this.#o.logger.warn(
            { retry_after_ms: decision.ms },
            'service rate limit: holding the queue',
          );
        }
        writes.push({ kind: 'later', query, at: decision.until, abandon: answered });
        return;
      case 'retry': {
        const reached = ports.mayHaveReached(err);
        if (reached !== undefined) this.#o.metrics?.possibleDuplicates.inc({ reason: reached });
        const base = this.#o.backoffMs * 2 ** query.failures;
        const wait = Math.round(base * (1 + 0.2 * (2 * this.#random() - 1)));
        writes.push({ kind: 'retry', query, at: now + wait });
        return;
      }
      case 'wait_demographics': {
        const wait = await ports.park(query, now);
        if (wait.kind === 'wait') {
          writes.push({ kind: 'later', query, at: wait.until });
          return;
        }
        const expired = `no birth date arrived within ${this.#o.demographicsWaitS} s; not sent`;
        endQuery(
          ended,
          writes,
          query,
          wait.kind === 'replaced'
            ? { kind: 'forget', countAs: 'superseded' }
            : failedWith('ERR_RECORD_WAITING_EXPIRED', expired),
          extra,
        );
        return;
      }
    }
  }

  async #finish(ended: Ended[], writes: DueWrite[]): Promise<void> {
    const { ports, logger } = this.#o;
    const now = this.#now();
    const withEvents = ended.filter((e) => e.decision.kind === 'end');
    const events = withEvents.map(({ query, data, decision }) => {
      const { outcome, failure, recommendations } = decision as EndDecision;
      return resultEvent(data, {
        outcome,
        patientId: ports.localIdOf(query) ?? null,
        ...(failure === undefined ? {} : { failure }),
        ...(recommendations === undefined ? {} : { recommendations }),
        now: new Date(now),
      });
    });
    if (events.length > 0) await ports.deliver(events);
    await this.#o.due.apply(writes);
    for (const { query, data, decision } of ended) {
      const eventId = decision.kind === 'end' ? data.queryId : null;
      // Prevent runs are counted apart: they are not concordance queries.
      const finished = isPreventPreset(query.ccsrCategory)
        ? this.#o.metrics?.preventRuns
        : this.#o.metrics?.queriesFinished;
      finished?.inc({ outcome: decision.countAs });
      logQueryEnd(logger, data, decision, now - query.dueAt);
      this.#o.onOutcome?.({ data, decision, eventId });
    }
  }
}
