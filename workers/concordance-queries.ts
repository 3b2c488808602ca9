import { DelayedError, Queue, RateLimitError, Worker, type Job } from 'bullmq';
import type { RedisClient } from '../src/queues/redis-client.ts';
import type { Logger } from 'pino';
import type { Config } from '../src/config/config-schema.ts';
import type { ResultEvent } from '../src/delivery/result-event.ts';
import type { Crosswalk } from '../src/identity/crosswalk.ts';
import type { FinishedOutcome, PipelineMetrics } from '../src/observability/pipeline-metrics.ts';
import { pollDelayMs, type PollScheduleOptions } from '../src/queries/poll-schedule.ts';
import {
  queryJobOptions,
  QueryJobDataSchema,
  type QueryJobData,
} from '../src/queries/query-job.ts';
import { resultEvent, type OutcomeDetails } from '../src/queries/query-outcome.ts';
import { PatientConsent } from '../src/privacy/patient-consent.ts';
import { QueryDispatcher } from '../src/queries/query-dispatcher.ts';
import type { QueryState, RemoteJob } from '../src/queries/query-state.ts';
import { AuthPause } from '../src/queues/auth-pause.ts';
import type { KeySpace } from '../src/queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../src/queues/queue-names.ts';
import { assemblePatient, RecordNotAssemblableError } from '../src/records/assemble-patient.ts';
import { DemographicsWait, RECORD_WAITING_EXPIRED } from '../src/records/demographics-wait.ts';
import { emptyClinicalRecord } from '../src/records/clinical-record.ts';
import { knownIdentifiers } from '../src/records/known-identifiers.ts';
import { IdentifierLeakError, prepareForService } from '../src/records/prepare-for-service.ts';
import type { RecordStore } from '../src/records/record-store.ts';
import type { ServiceClient } from '../src/service/create-service-client.ts';
import { ServiceAuthError } from '../src/service/errors/service-auth-error.ts';
import { ServiceError } from '../src/service/errors/service-error.ts';
import { ServiceNotFoundError } from '../src/service/errors/service-not-found-error.ts';
import { ServiceRateLimitedError } from '../src/service/errors/service-rate-limited-error.ts';
import { ServiceTimeoutError } from '../src/service/errors/service-timeout-error.ts';
import { ServiceValidationError } from '../src/service/errors/service-validation-error.ts';

/** Where finished queries go (the outbound queue, later the webhook). */
export interface ResultSink {
  deliver(event: ResultEvent): Promise<void>;
}

/** How a query job ended, as its BullMQ return value and for metrics. */
export type QueryJobResult =
  | { outcome: ResultEvent['status'] | 'superseded'; eventId: string | null }
  | { outcome: 'stale'; eventId: null };

export interface ConcordanceQueriesDeps {
  /** A worker connection (`maxRetriesPerRequest: null`). */
  connection: RedisClient;
  /** The prefix of the partition whose queue and due set this worker serves. */
  prefix: string;
  /**
   * Where the patients' keys are (opt-outs, demographics waits): the partitions.
   * @defaultValue `prefix` (one partition)
   */
  keySpace?: KeySpace;
  config: Config;
  client: ServiceClient;
  state: QueryState;
  records: RecordStore;
  crosswalk: Crosswalk;
  sink: ResultSink;
  logger: Logger;
  /** Called when a query ends (tests wait on it). */
  onOutcome?: (result: QueryJobResult, data: QueryJobData) => void;
  /**
   * Polls, poll lateness, finished queries, resubmissions. Deliveries are counted by the channels
   * (the runtime meters the outbound queue), not here.
   */
  metrics?: PipelineMetrics;
  /** @defaultValue true */
  autorun?: boolean;
  /** @defaultValue `Date.now` */
  now?: () => number;
  /** Queries waiting for a birth date. @defaultValue a DemographicsWait on `connection` */
  demographics?: DemographicsWait;
}

/** A 429 without Retry-After holds the queue this long. */
const DEFAULT_RATE_LIMIT_MS = 5_000;

/**
 * True when a submission failed without any answer in a way that may have let it reach the service
 * (a timeout, a reset connection): a refused connection never reached it.
 */
function noAnswer(err: ServiceError): boolean {
  if (err.status !== undefined) return false;
  const cause = err.cause as { code?: unknown } | undefined;
  return cause?.code !== 'ECONNREFUSED' && cause?.code !== 'ENOTFOUND';
}

/** Waits for the remote job without holding a worker slot. */
async function waitUntil(job: Job, token: string | undefined, at: number): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}

function pollOptions(config: Config): PollScheduleOptions {
  const poll = config.queries.poll;
  return {
    firstDelayMs: poll.first_delay_ms,
    factor: poll.factor,
    maxDelayMs: poll.max_delay_ms,
    jitter: poll.jitter,
    deadlineMs: poll.deadline_ms,
  };
}

/**
 * The queue of concordance queries and its worker. A job is one logical query of one
 * (patient_service_id, ccsr_category) and walks: scheduled (debounce) -> submitting -> polling,
 * persisting each step in its data so that a job picked up again after a crash resumes there.
 */
export async function initConcordanceQueries(deps: ConcordanceQueriesDeps): Promise<{
  name: string;
  queue: Queue;
  worker: Worker;
}> {
  const { config, client, state, records, crosswalk, sink, prefix, connection, metrics } = deps;
  const now = deps.now ?? Date.now;
  const schedule = pollOptions(config);
  const keySpace = deps.keySpace ?? prefix;
  const demographics =
    deps.demographics ?? new DemographicsWait({ redis: connection, prefix: keySpace });
  const queue = new Queue(CONCORDANCE_QUERIES, {
    connection,
    prefix,
    defaultJobOptions: queryJobOptions(config.queries),
  });
  const authPause = new AuthPause(queue, connection, prefix);
  const consent = new PatientConsent({ redis: connection, prefix: keySpace });
  // Due queries (written by ingest with their record) become jobs of this queue.
  const dispatcher = new QueryDispatcher({
    redis: connection,
    prefix,
    queue,
    logger: deps.logger,
    intervalMs: config.queries.dispatch.interval_ms,
    batchSize: config.queries.dispatch.batch,
    leaseMs: config.queries.dispatch.lease_ms,
    now,
  });

  const logFor = (job: Job, data: QueryJobData) =>
    deps.logger.child({
      query_key: `${data.patientServiceId}/${data.ccsrCategory}`,
      job_id: job.id,
      remote_job_id: data.remoteJobId,
      record_version: data.recordVersion,
      attempts: job.attemptsStarted,
    });

  async function finish(
    job: Job,
    data: QueryJobData,
    details: Omit<OutcomeDetails, 'patientId'>,
    countAs: FinishedOutcome = details.outcome,
  ) {
    const event = resultEvent(data, {
      ...details,
      patientId: (await crosswalk.localIdOf(data.patientServiceId)) ?? null,
      now: new Date(now()),
    });
    await sink.deliver(event);
    await state.finish(data.patientServiceId, data.ccsrCategory, data.seq);
    logFor(job, data).info(
      {
        outcome: details.outcome,
        error_code: details.failure?.code,
        exec_ms: now() - job.timestamp,
      },
      'query finished',
    );
    const result: QueryJobResult = { outcome: details.outcome, eventId: event.id };
    metrics?.queriesFinished.inc({ outcome: countAs });
    deps.onOutcome?.(result, data);
    return result;
  }

  async function superseded(job: Job, data: QueryJobData): Promise<QueryJobResult> {
    if (config.queries.deliver_superseded && data.remoteJobId !== undefined) {
      return finish(
        job,
        data,
        {
          outcome: 'failed',
          failure: { code: 'ERR_SUPERSEDED', message: 'a newer query of this key was submitted' },
        },
        'superseded',
      );
    }
    await state.finish(data.patientServiceId, data.ccsrCategory, data.seq);
    logFor(job, data).info({ outcome: 'superseded' }, 'query superseded by a newer one');
    const result: QueryJobResult = { outcome: 'superseded', eventId: null };
    metrics?.queriesFinished.inc({ outcome: 'superseded' });
    deps.onOutcome?.(result, data);
    return result;
  }

  /** Errors that hold the whole queue rather than this job; anything else is rethrown. */
  async function holdQueue(job: Job, data: QueryJobData, token: string | undefined, err: unknown) {
    if (err instanceof ServiceRateLimitedError) {
      const ms = err.retryAfterMs ?? DEFAULT_RATE_LIMIT_MS;
      logFor(job, data).warn({ retry_after_ms: ms }, 'service rate limit: holding the queue');
      await queue.rateLimit(ms);
      throw new RateLimitError();
    }
    if (err instanceof ServiceAuthError) {
      if (await authPause.pause(err.code)) {
        logFor(job, data).error(
          { status: err.status },
          'the service refused the API key: queue paused until a worker starts with a valid key',
        );
      }
      return waitUntil(job, token, now() + config.queries.auth_pause_ms);
    }
    throw err;
  }

  /**
   * The record has no birth date yet: the query waits (delayed, no event) until the wait expires;
   * the next update of the patient opens a newer query that runs once the birth date is there and
   * supersedes this one. See DemographicsWait.
   */
  async function waitForDemographics(job: Job, data: QueryJobData, token: string | undefined) {
    const decision = await demographics.park(
      data.patientServiceId,
      data.ccsrCategory,
      data.seq,
      now(),
      config.queries.demographics_wait_s * 1_000,
    );
    if (decision.kind === 'expired') {
      return finish(job, data, {
        outcome: 'failed',
        failure: {
          code: RECORD_WAITING_EXPIRED,
          message: `no birth date arrived within ${config.queries.demographics_wait_s} s; not sent`,
        },
      });
    }
    if (decision.kind === 'replaced') {
      await state.finish(data.patientServiceId, data.ccsrCategory, data.seq);
      logFor(job, data).info({ outcome: 'superseded' }, 'a newer query waits for the birth date');
      const result: QueryJobResult = { outcome: 'superseded', eventId: null };
      metrics?.queriesFinished.inc({ outcome: 'superseded' });
      deps.onOutcome?.(result, data);
      return result;
    }
    logFor(job, data).info(
      { until: new Date(decision.until).toISOString() },
      'query waits for a birth date',
    );
    return waitUntil(job, token, decision.until);
  }

  async function submit(
    job: Job,
    data: QueryJobData,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<QueryJobResult> {
    if (await state.isSuperseded(data.patientServiceId, data.ccsrCategory, data.seq)) {
      return superseded(job, data);
    }
    const stored = await records.get(data.patientServiceId);
    const localId = await crosswalk.localIdOf(data.patientServiceId);
    const hasRecord = stored?.record !== undefined || stored?.clinical !== undefined;
    if (stored === undefined || !hasRecord || localId === undefined) {
      return finish(job, data, {
        outcome: 'rejected',
        failure: { code: 'ERR_RECORD_MISSING', message: 'no record is stored for this patient' },
      });
    }
    const psid = data.patientServiceId;
    const withVersion = { ...data, recordVersion: stored.version };
    let remoteJobId: string;
    let sentAt: number;
    try {
      // A record sent as JSON takes precedence; otherwise the feeds' record is assembled now.
      const assembled =
        stored.record ??
        assemblePatient(stored.clinical ?? emptyClinicalRecord(), { now: new Date(now()) });
      if (stored.clinical !== undefined && stored.record === undefined) {
        await demographics.release(psid, data.ccsrCategory);
      }
      const payload = await prepareForService(assembled, {
        localId,
        knownIdentifiers: stored.clinical ? knownIdentifiers(localId, stored.clinical.patient) : [],
        identifyingFields: config.privacy.identifying_fields,
        metadataAllowedKeys: config.privacy.metadata_allowed_keys,
        onRemoved: (kind, count) => metrics?.freeTextRemoved.inc({ kind }, count),
        opaqueFhirId: (fhirId) => crosswalk.opaqueFhirId(psid, fhirId),
      });
      const begun = await state.beginSubmission(psid, data.ccsrCategory, data.seq, data.resubmits);
      if (begun.stored !== undefined) {
        // An earlier run stored the remote job but died before its job data said so: poll it.
        return startPolling(job, data, token, begun.stored);
      }
      if (begun.interrupted) metrics?.possibleDuplicates.inc({ reason: 'worker_restart' });
      sentAt = now();
      ({ jobId: remoteJobId } = await client.concordance.submit(
        { assembled_patient: payload, ccsr_category: data.ccsrCategory },
        { signal },
      ));
    } catch (err) {
      if (err instanceof RecordNotAssemblableError && err.reason === 'birth_date_missing') {
        return waitForDemographics(job, withVersion, token);
      }
      if (
        err instanceof IdentifierLeakError ||
        err instanceof RecordNotAssemblableError ||
        err instanceof ServiceValidationError
      ) {
        return finish(job, withVersion, {
          outcome: 'rejected',
          failure: {
            code: err.code,
            message: err.message,
            ...(err instanceof ServiceValidationError ? { items: err.items } : {}),
          },
        });
      }
      if (!(err instanceof ServiceError)) throw err;
      if (err instanceof ServiceRateLimitedError || err instanceof ServiceAuthError) {
        // Answered without creating a job: this attempt is over, and the queue is held.
        await state.abandonSubmission(psid, data.ccsrCategory, data.seq);
        return holdQueue(job, withVersion, token, err);
      }
      if (!err.transient) {
        // 400, 404, 413, 415, or a 2xx without a readable job id: sending it again would not help
        // (and after a 2xx might leave a second remote job behind).
        return finish(job, withVersion, {
          outcome: 'failed',
          failure: { code: err.code, message: err.message },
        });
      }
      if (noAnswer(err)) {
        metrics?.possibleDuplicates.inc({
          reason: err instanceof ServiceTimeoutError ? 'timeout' : 'connection_lost',
        });
      }
      // This attempt is over (counted above if it may have reached the service).
      await state.abandonSubmission(psid, data.ccsrCategory, data.seq);
      const attempts = job.opts.attempts ?? 1;
      if (job.attemptsMade + 1 >= attempts) {
        return finish(job, withVersion, {
          outcome: 'failed',
          failure: { code: err.code, message: `${err.message} (after ${attempts} attempts)` },
        });
      }
      throw err;
    }
    // The remote job is stored in the one step that learns it: from here on the query is never
    // submitted again, whatever happens to this process.
    const remote: RemoteJob = {
      remoteJobId,
      submittedAt: now(),
      resubmits: data.resubmits,
      recordVersion: stored.version,
    };
    await state.markSubmitted(psid, data.ccsrCategory, data.seq, remote);
    metrics?.submitWindow.observe((now() - sentAt) / 1_000);
    return startPolling(job, data, token, remote);
  }

  /** Records the submitted step in the job's data and waits for the first poll. */
  async function startPolling(
    job: Job,
    data: QueryJobData,
    token: string | undefined,
    remote: RemoteJob,
  ): Promise<QueryJobResult> {
    const polling: QueryJobData = {
      ...data,
      step: 'polling',
      remoteJobId: remote.remoteJobId,
      recordVersion: remote.recordVersion,
      submittedAt: remote.submittedAt,
      polls: 0,
      nextPollAt: remote.submittedAt + pollDelayMs(0, schedule),
    };
    await job.updateData(polling);
    logFor(job, polling).info({ queued_ms: remote.submittedAt - job.timestamp }, 'query submitted');
    return waitUntil(job, token, polling.nextPollAt ?? remote.submittedAt);
  }

  async function poll(
    job: Job,
    data: QueryJobData,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<QueryJobResult> {
    if (data.nextPollAt !== undefined) {
      metrics?.pollLateness.observe(Math.max(0, now() - data.nextPollAt) / 1_000);
    }
    if (await state.isSuperseded(data.patientServiceId, data.ccsrCategory, data.seq)) {
      return superseded(job, data);
    }
    const remoteJobId = data.remoteJobId ?? '';
    const deadline = (data.submittedAt ?? now()) + schedule.deadlineMs;
    const next = async (): Promise<QueryJobResult> => {
      if (now() >= deadline) {
        return finish(job, data, {
          outcome: 'timed_out',
          failure: { code: 'ERR_QUERY_TIMED_OUT', message: 'the remote job did not end in time' },
        });
      }
      const polls = data.polls + 1;
      const nextPollAt = Math.min(deadline, now() + pollDelayMs(polls, schedule));
      await job.updateData({ ...data, polls, nextPollAt });
      return waitUntil(job, token, nextPollAt);
    };

    let answer: Awaited<ReturnType<ServiceClient['concordance']['get']>> | 'lost';
    try {
      answer = await client.concordance.get(remoteJobId, { signal });
    } catch (err) {
      metrics?.polls.inc({ state: err instanceof ServiceNotFoundError ? 'lost' : 'error' });
      if (err instanceof ServiceNotFoundError) answer = 'lost';
      else if (err instanceof ServiceRateLimitedError || err instanceof ServiceAuthError) {
        return holdQueue(job, data, token, err);
      } else if (err instanceof ServiceError) {
        logFor(job, data).warn({ error_code: err.code }, 'poll failed; polling again later');
        return next();
      } else throw err;
    }
    const state_ = answer === 'lost' ? 'lost' : answer.state;
    if (answer !== 'lost') metrics?.polls.inc({ state: answer.state });
    if (state_ === 'pending') return next();
    if (state_ === 'success' && answer !== 'lost') {
      return finish(job, data, { outcome: 'completed', concordance: answer.concordance });
    }
    if (state_ === 'failure' && answer !== 'lost') {
      return finish(job, data, {
        outcome: 'failed',
        concordance: answer.concordance,
        failure: {
          code: 'ERR_REMOTE_JOB_FAILED',
          message: `the remote job ended ${answer.status}`,
        },
      });
    }
    if (data.resubmits < config.queries.resubmit_lost) {
      logFor(job, data).warn(
        { resubmits: data.resubmits + 1 },
        'remote job lost; submitting again',
      );
      const again: QueryJobData = {
        ...data,
        step: 'submitting',
        remoteJobId: undefined,
        resubmits: data.resubmits + 1,
      };
      await job.updateData(again);
      metrics?.resubmissions.inc();
      return submit(job, again, token, signal);
    }
    return finish(job, data, {
      outcome: 'lost',
      failure: { code: 'ERR_REMOTE_JOB_LOST', message: 'the service no longer knows the job' },
    });
  }

  // A worker starts with the key it was given: if the queue was paused because the service
  // refused a key, this one deserves a try.
  if (await authPause.resumeIfPaused()) {
    deps.logger.warn('resumed the query queue, paused earlier for a refused API key');
  }

  /** One step of a query: claim, submit or poll. */
  async function step(
    job: Job,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<QueryJobResult> {
    let data = QueryJobDataSchema.parse(job.data);
    if (data.step === 'scheduled') {
      const triggers = await state.claim(data.patientServiceId, data.ccsrCategory, data.seq);
      if (triggers === undefined) {
        logFor(job, data).debug('stale query job: another job of this key took its updates');
        return { outcome: 'stale', eventId: null };
      }
      data = { ...data, step: 'submitting', triggers };
      await job.updateData(data);
      if (await consent.isOptedOut(data.patientServiceId)) {
        // Opted out after ingest opened the query: it is not sent.
        return finish(job, data, {
          outcome: 'rejected',
          failure: { code: 'ERR_PATIENT_OPTED_OUT', message: 'the patient opted out' },
        });
      }
    }
    return data.step === 'submitting'
      ? submit(job, data, token, signal)
      : poll(job, data, token, signal);
  }

  /**
   * A query that ends because of an error nothing above expected (or a job BullMQ failed itself,
   * such as one that stalled too often) still ends with a `failed` event.
   */
  async function failUnexpectedly(job: Job, err: { name: string; message: string }) {
    const parsed = QueryJobDataSchema.safeParse(job.data);
    if (!parsed.success) return;
    const stalled = /stalled/i.test(err.message);
    await finish(job, parsed.data, {
      outcome: 'failed',
      failure: stalled
        ? {
            code: 'ERR_QUERY_STALLED',
            message: `the query's worker stopped more than ${config.queries.max_stalled_count} times while it ran`,
          }
        : {
            code: 'ERR_QUERY_INTERNAL',
            message: `the query ended on an internal error (${err.name})`,
          },
    });
  }

  /**
   * Gives every failed query job its `failed` event, then removes the job: the event (and the
   * log line) is what remains of it. Runs on a timer and whenever a job stalls, since BullMQ fails
   * a job that stalled too often without telling the worker.
   */
  let sweeping: Promise<void> | undefined;
  async function sweepFailed(): Promise<void> {
    for (const job of await queue.getFailed(0, 99)) {
      await failUnexpectedly(job, { name: 'Error', message: job.failedReason });
      await job.remove();
    }
  }
  const sweep = () => {
    sweeping ??= sweepFailed()
      .catch((err: unknown) =>
        deps.logger.warn(
          { err: { name: (err as Error).name, message: (err as Error).message } },
          'failed query jobs could not be swept; trying again later',
        ),
      )
      .finally(() => {
        sweeping = undefined;
      });
    return sweeping;
  };

  const worker = new Worker<QueryJobData, QueryJobResult>(
    CONCORDANCE_QUERIES,
    async (job, token, signal) => {
      try {
        return await step(job, token, signal);
      } catch (err) {
        if (
          err instanceof DelayedError ||
          err instanceof RateLimitError ||
          !(err instanceof Error) ||
          job.attemptsMade + 1 < (job.opts.attempts ?? 1)
        ) {
          throw err;
        }
        // The last attempt: the query ends here, with its event (if even that fails, the job
        // fails and the sweep gives it its event).
        logFor(job, job.data as QueryJobData).error(
          { err: { name: err.name, message: err.message } },
          'query ended on an unexpected error',
        );
        await failUnexpectedly(job, err);
        return { outcome: 'failed', eventId: (job.data as QueryJobData).queryId };
      }
    },
    {
      connection,
      prefix,
      concurrency: config.queries.concurrency,
      lockDuration: config.queries.lock_duration_ms,
      // A killed worker's active jobs come back after one lock period, and a job may survive
      // several crashes: it resumes from its persisted step. One that keeps stalling ends failed
      // (ERR_QUERY_STALLED).
      stalledInterval: config.queries.lock_duration_ms,
      maxStalledCount: config.queries.max_stalled_count,
      // Needed for queue.rateLimit() to hold the queue; the numbers themselves never bind.
      limiter: { max: 1_000_000, duration: 1_000 },
      autorun: deps.autorun ?? true,
    },
  );
  worker.on('failed', (job, err) => {
    if (job)
      logFor(job, job.data).error(
        { err: { name: err.name, message: err.message } },
        'query job failed',
      );
    void sweep();
  });
  worker.on('stalled', () => void sweep());
  const sweepTimer = setInterval(() => void sweep(), config.queries.failed_sweep_ms);
  sweepTimer.unref();
  // The dispatcher lives and dies with the worker: closing the worker (the WorkerRegistry, tests)
  // stops it too.
  worker.on('closing', () => {
    clearInterval(sweepTimer);
    void dispatcher.close();
  });
  if (deps.autorun ?? true) dispatcher.start();
  return { name: CONCORDANCE_QUERIES, queue, worker };
}
