import { randomUUID } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { isPreventPreset } from '../ccsr/preset-names.ts';
import type { AssembledPatient } from '../interface/assembled-patient.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import type { FeedMetrics } from '../observability/feed-metrics.ts';
import type { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import type { WaitDecision } from '../records/demographics-wait.ts';
import { adaptiveDelayMs } from './adaptive-schedule.ts';
import type { LatencyProfiles } from './latency-profiles.ts';
import type { PollScheduleOptions } from './poll-schedule.ts';
import type { PolledRemoteJob } from './poll-set.ts';
import { codeOf, endCall, statusOf, type CallEnd, type QuerySpans } from './query-spans.ts';
import { queryJobId } from './query-job.ts';
import {
  decideBeforeSubmit,
  decideStalled,
  decideSubmitFailure,
  type EndDecision,
  type ForgetDecision,
  type LifecycleRules,
  type SubmitFailure,
} from './query-lifecycle.ts';
import type { DueQuery } from './query-outbox.ts';
import { logQueryEnd, resultEvent, type QueryRecord } from './query-outcome.ts';
import type { ResultErrorCode } from './result-error-codes.ts';
import type { ClaimedQuery, SubmissionStore, SubmissionWrite } from './submission-store.ts';

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
  /** Hands ended queries' results to the delivery side. */
  deliver(events: ResultEvent[]): Promise<void>;
  /** The service refused the API key: pause the partition's queries. */
  pauseForAuth(): Promise<void>;
  /** The hospital's id of the patient, from the claim's sealed value. */
  localIdOf(query: ClaimedQuery): string | undefined;
}

/** How a query ended on the submission side (for tests and metrics). */
export interface SubmitOutcome {
  data: QueryRecord;
  decision: EndDecision | ForgetDecision;
  eventId: string | null;
}

/**
 * What a submission came to, for its queue job to carry out:
 * - `submitted`: the remote job is stored with its first poll; the job completes with its id;
 * - `ended`: the query ended here (its event, if any, is delivered); the job completes, or fails
 *   for good when the query failed (`failure`);
 * - `stale`: nothing to submit (the query ended elsewhere, or its patient was purged);
 * - `retry`: a transient failure, counted; the job is retried with backoff;
 * - `rate_limited`: the service asked to wait `ms`; the queue is held, the job runs again;
 * - `paused`: the service refused the key; the queue is paused, the job runs again once resumed;
 * - `later`: waiting for a birth date; the job runs again at `at`.
 */
export type SubmissionStep =
  | { kind: 'submitted'; remoteJobId: string }
  | { kind: 'ended'; outcome: string; failure?: { code: string; message: string } }
  | { kind: 'stale' }
  | { kind: 'retry'; error: Error }
  | { kind: 'rate_limited'; ms: number }
  | { kind: 'paused' }
  | { kind: 'later'; at: number };

export interface QuerySubmissionOptions {
  store: SubmissionStore;
  ports: SubmitPorts;
  /** The categories' recent job latencies, which the first poll's delay learns from. */
  profiles: LatencyProfiles;
  rules: LifecycleRules;
  schedule: PollScheduleOptions;
  /** `queries.demographics_wait_s` (for the failure message). */
  demographicsWaitS: number;
  logger: Logger;
  /** The service's `host[:port]`, named when its trouble ends a query (see logQueryEnd). */
  serviceHost?: string;
  metrics?: PipelineMetrics;
  /** Counts each query sent to the service as `sent` by the feed that opened it. */
  feeds?: FeedMetrics;
  /** Told of each query that ended here, once its outcome is written. */
  onOutcome?: (outcome: SubmitOutcome) => void;
  /**
   * The `cgs.submit` span of each submission (tracing on); none when tracing is off, so that the
   * submission does no tracing work at all.
   */
  spans?: QuerySpans | undefined;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/** `cw.outcome` of a submission's span: what its job does next, or how the query ended. */
function outcomeOf(step: SubmissionStep): CallEnd {
  switch (step.kind) {
    case 'ended':
      return { outcome: step.outcome, errorCode: step.failure?.code };
    case 'retry':
      return { outcome: 'retry', errorCode: codeOf(step.error), status: statusOf(step.error) };
    case 'submitted':
      return { outcome: step.kind, remoteJobId: step.remoteJobId };
    default:
      return { outcome: step.kind };
  }
}

/** The query's data as a result event needs it. */
function dataOf(query: ClaimedQuery, extra: Partial<QueryRecord> = {}): QueryRecord {
  return {
    queryId: query.queryId,
    patientServiceId: query.patientServiceId,
    ccsrCategory: query.ccsrCategory,
    seq: query.seq,
    triggers: query.triggers,
    polls: 0,
    resubmits: query.resubmits,
    ...extra,
  };
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

/**
 * The submission of one query, as a job of the partition's `concordance-queries` queue runs it:
 * one script claims the query and reads everything it needs (see SubmissionStore.claim); what
 * ends it without a POST comes first (opted out, superseded, no record, workers that kept dying
 * with it); then the payload is prepared, the submission is marked begun, the POST goes out, and
 * the remote job is stored with its first poll in one script as soon as it answers — so the
 * window in which a crash sends a query twice stays the POST's round trip plus one write. Every
 * decision is the pure lifecycle's (query-lifecycle.ts); this class carries them out and says
 * what the job should do next ({@link SubmissionStep}).
 */
export class QuerySubmission {
  readonly #o: QuerySubmissionOptions;
  readonly #now: () => number;

  constructor(options: QuerySubmissionOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Runs the submission of `query`, due since `dueAt`; `signal` aborts its requests. `job`: what
   * its queue job counted — failed attempts and stalls — so that the lifecycle never counts fewer
   * than BullMQ does (an attempt lost to an error outside the lifecycle, a stall before a retry
   * cleared the runs), and ends the query with its event before BullMQ would fail its job without.
   */
  async run(
    query: DueQuery,
    dueAt: number,
    signal: AbortSignal,
    job: { attemptsMade: number; stalledCounter: number } = { attemptsMade: 0, stalledCounter: 0 },
  ): Promise<SubmissionStep> {
    const { store } = this.#o;
    const stored = await store.claim(query, dueAt, randomUUID(), this.#now());
    if (stored === undefined) return { kind: 'stale' };
    const claimed: ClaimedQuery = {
      ...stored,
      failures: Math.max(stored.failures, job.attemptsMade),
      leases: Math.max(stored.leases, job.stalledCounter + 1),
    };
    const spans = this.#o.spans;
    if (spans === undefined) return this.#claimed(claimed, signal, undefined);
    return spans.submit(claimed, claimed.traceparent, async (span, traceparent) => {
      const step = await this.#claimed(claimed, signal, traceparent);
      endCall(span, outcomeOf(step));
      return step;
    });
  }

  /**
   * What follows the claim, under the submission's span (`traceparent`: its own, which the remote
   * job keeps for the polls' spans).
   */
  async #claimed(
    claimed: ClaimedQuery,
    signal: AbortSignal,
    traceparent: string | undefined,
  ): Promise<SubmissionStep> {
    const { rules, ports, store } = this.#o;
    // What ends a query without sending it comes first (a superseded query ends without an
    // event, as on the poll side); then one whose workers kept dying with it.
    const before =
      decideBeforeSubmit(
        {
          optedOut: claimed.optedOut,
          superseded: claimed.submitted > claimed.seq,
          hasRecord: claimed.record.version !== null && claimed.sealedLocalId !== null,
        },
        rules,
      ) ?? decideStalled(claimed.leases, rules);
    if (before !== undefined) return this.#end(claimed, before);
    let prepared: Prepared;
    try {
      prepared = await ports.prepare(claimed);
    } catch (err) {
      return this.#afterFailure(claimed, err, undefined);
    }
    if (prepared.kind === 'missing') return this.#end(claimed, RECORD_MISSING);
    const begun = await store.begin(claimed);
    if (begun.state === 'interrupted') {
      this.#o.metrics?.possibleDuplicates.inc({ reason: 'worker_restart' });
    }
    if (prepared.kind === 'call') return this.#call(claimed, prepared, signal);
    if (begun.state === 'stored') {
      // An earlier run stored the remote job and died before its job completed.
      await ports.submitted(claimed, begun.remote, this.#now());
      return { kind: 'submitted', remoteJobId: begun.remote.remoteJobId };
    }
    return this.#send(claimed, prepared, signal, traceparent);
  }

  /** Makes a query's call (Prevent): its answer ends the query at once, `completed`. */
  async #call(
    query: ClaimedQuery,
    prepared: Extract<Prepared, { kind: 'call' }>,
    signal: AbortSignal,
  ): Promise<SubmissionStep> {
    const { recordVersion } = prepared;
    let recommendations: Record<string, unknown>;
    try {
      recommendations = await prepared.call(signal);
    } catch (err) {
      return this.#afterFailure(query, err, recordVersion);
    }
    this.#countSent(query);
    const completed: EndDecision = {
      kind: 'end',
      outcome: 'completed',
      countAs: 'completed',
      recommendations,
    };
    return this.#end(query, completed, { recordVersion });
  }

  async #send(
    query: ClaimedQuery,
    prepared: Extract<Prepared, { kind: 'payload' }>,
    signal: AbortSignal,
    traceparent: string | undefined,
  ): Promise<SubmissionStep> {
    const sentAt = this.#now();
    let remoteJobId: string;
    try {
      remoteJobId = await this.#o.ports.submit(prepared.payload, query.ccsrCategory, signal);
    } catch (err) {
      return this.#afterFailure(query, err, prepared.recordVersion);
    }
    const submittedAt = this.#now();
    const remote: PolledRemoteJob = {
      remoteJobId,
      submittedAt,
      resubmits: query.resubmits,
      recordVersion: prepared.recordVersion,
      queryId: query.queryId,
      polls: 0,
      ...(traceparent === undefined ? {} : { tp: traceparent }),
    };
    const profile = this.#o.profiles.get(query.ccsrCategory);
    const firstPollAt = submittedAt + adaptiveDelayMs(0, 0, profile, this.#o.schedule);
    await this.#o.ports.submitted(query, remote, firstPollAt);
    this.#countSent(query);
    this.#o.metrics?.submitWindow.observe((submittedAt - sentAt) / 1_000);
    if (this.#o.logger.isLevelEnabled('info')) {
      this.#o.logger.info(
        {
          query_key: `${query.patientServiceId}/${query.ccsrCategory}`,
          job_id: queryJobId(query.patientServiceId, query.ccsrCategory, query.seq),
          query_id: query.queryId,
          remote_job_id: remoteJobId,
          record_version: prepared.recordVersion,
          queued_ms: submittedAt - query.dueAt,
        },
        'query submitted',
      );
    }
    return { kind: 'submitted', remoteJobId };
  }

  /** `cw_feed_messages_total{stage="sent"}`, by the feed that opened the query (when known). */
  #countSent(query: ClaimedQuery): void {
    if (query.feed !== undefined) this.#o.feeds?.count(query.feed, 'sent');
  }

  /** Carries out what the lifecycle decides for a failed preparation or submission. */
  async #afterFailure(
    query: ClaimedQuery,
    err: unknown,
    recordVersion: number | undefined,
  ): Promise<SubmissionStep> {
    const { ports, rules, store } = this.#o;
    const now = this.#now();
    const extra = recordVersion === undefined ? {} : { recordVersion };
    const status = statusOf(err);
    // The service's answer on the submission's span (none when tracing is off).
    if (status !== undefined)
      trace.getActiveSpan()?.setAttribute('http.response.status_code', status);
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
      return this.#end(query, failedWith('ERR_QUERY_INTERNAL', internal), extra);
    }
    const decision = decideSubmitFailure(failure, query.failures + 1, rules, now);
    const answered = failure.kind !== 'birth_date_missing' && failure.kind !== 'refused';
    switch (decision.kind) {
      case 'end':
        return this.#end(query, decision, extra);
      case 'hold':
        await store.apply({ kind: 'later', query, abandon: answered });
        if (decision.reason === 'auth_refused') {
          await ports.pauseForAuth();
          return { kind: 'paused' };
        }
        return { kind: 'rate_limited', ms: decision.ms };
      case 'retry': {
        const reached = ports.mayHaveReached(err);
        if (reached !== undefined) this.#o.metrics?.possibleDuplicates.inc({ reason: reached });
        const errorCode = failure.kind === 'transient' ? failure.code : undefined;
        await store.apply(
          { kind: 'retry', query, ...(errorCode === undefined ? {} : { errorCode }) },
          now,
        );
        const error = err instanceof Error ? err : new Error(String(err));
        return { kind: 'retry', error };
      }
      case 'wait_demographics': {
        const wait = await ports.park(query, now);
        if (wait.kind === 'wait') {
          await store.apply({ kind: 'later', query });
          return { kind: 'later', at: wait.until };
        }
        const expired = `no birth date arrived within ${this.#o.demographicsWaitS} s; not sent`;
        return this.#end(
          query,
          wait.kind === 'replaced'
            ? { kind: 'forget', countAs: 'superseded' }
            : failedWith('ERR_RECORD_WAITING_EXPIRED', expired),
          extra,
        );
      }
    }
  }

  /**
   * Ends `query` with `decision`: its event (if any) is delivered, then the query is forgotten;
   * counted and logged once written.
   */
  async #end(
    query: ClaimedQuery,
    decision: EndDecision | ForgetDecision,
    extra: Partial<QueryRecord> = {},
  ): Promise<SubmissionStep> {
    const { ports, logger, store } = this.#o;
    const now = this.#now();
    const data = dataOf(query, extra);
    if (decision.kind === 'end') {
      const { outcome, failure, recommendations } = decision;
      await ports.deliver([
        resultEvent(data, {
          outcome,
          patientId: ports.localIdOf(query) ?? null,
          ...(failure === undefined ? {} : { failure }),
          ...(recommendations === undefined ? {} : { recommendations }),
          now: new Date(now),
        }),
      ]);
    }
    const write: SubmissionWrite = {
      kind: 'end',
      query,
      end:
        decision.kind === 'end'
          ? { outcome: decision.outcome, errorCode: decision.failure?.code, eventId: data.queryId }
          : { outcome: decision.countAs },
    };
    await store.apply(write, now);
    // Prevent runs are counted apart: they are not concordance queries.
    const finished = isPreventPreset(query.ccsrCategory)
      ? this.#o.metrics?.preventRuns
      : this.#o.metrics?.queriesFinished;
    finished?.inc({ outcome: decision.countAs });
    logQueryEnd(logger, data, decision, now - query.dueAt, this.#o.serviceHost);
    this.#o.onOutcome?.({ data, decision, eventId: decision.kind === 'end' ? data.queryId : null });
    if (decision.kind === 'end' && decision.failure !== undefined) {
      const { code, message } = decision.failure;
      return { kind: 'ended', outcome: decision.outcome, failure: { code, message } };
    }
    return {
      kind: 'ended',
      outcome: decision.kind === 'end' ? decision.outcome : decision.countAs,
    };
  }
}
