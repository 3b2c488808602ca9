import { DelayedError, Queue, RateLimitError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../src/config/config-schema.ts';
import type { ResultEvent } from '../src/delivery/result-event.ts';
import type { Crosswalk } from '../src/identity/crosswalk.ts';
import type { PipelineMetrics } from '../src/observability/pipeline-metrics.ts';
import { PatientConsent } from '../src/privacy/patient-consent.ts';
import { adaptiveDelayMs } from '../src/queries/adaptive-schedule.ts';
import { LatencyProfiles } from '../src/queries/latency-profiles.ts';
import type { PollScheduleOptions } from '../src/queries/poll-schedule.ts';
import { PollScheduler, type PolledOutcome } from '../src/queries/poll-scheduler.ts';
import { holdKey, PollSet } from '../src/queries/poll-set.ts';
import { QueryDispatcher } from '../src/queries/query-dispatcher.ts';
import {
  queryJobId,
  queryJobOptions,
  QueryJobDataSchema,
  type QueryJobData,
} from '../src/queries/query-job.ts';
import {
  decideBeforeSubmit,
  decideSubmitFailure,
  type EndDecision,
  type ForgetDecision,
  type HoldDecision,
  type LifecycleRules,
} from '../src/queries/query-lifecycle.ts';
import { resultEvent } from '../src/queries/query-outcome.ts';
import type { QueryState, RemoteJob } from '../src/queries/query-state.ts';
import {
  mayHaveReachedService,
  pollAnswerOf,
  submitFailureOf,
} from '../src/queries/service-answers.ts';
import { AuthPause } from '../src/queues/auth-pause.ts';
import type { KeySpace } from '../src/queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../src/queues/queue-names.ts';
import type { RedisClient } from '../src/queues/redis-client.ts';
import { assemblePatient } from '../src/records/assemble-patient.ts';
import { emptyClinicalRecord } from '../src/records/clinical-record.ts';
import { DemographicsWait, RECORD_WAITING_EXPIRED } from '../src/records/demographics-wait.ts';
import { knownIdentifiers } from '../src/records/known-identifiers.ts';
import { prepareForService } from '../src/records/prepare-for-service.ts';
import type { RecordStore } from '../src/records/record-store.ts';
import type { ServiceClient } from '../src/service/create-service-client.ts';
import { ServiceTimeoutError } from '../src/service/errors/service-timeout-error.ts';

/** Where finished queries go (the outbound queue, later the webhook). */
export interface ResultSink {
  deliver(event: ResultEvent): Promise<void>;
  /** Hands over several events at once (one bulk add where the channel can). */
  deliverMany?(events: ResultEvent[]): Promise<void>;
}

/** How a query job ended, as its BullMQ return value and for metrics. */
export type QueryJobResult =
  | { outcome: ResultEvent['status'] | 'superseded'; eventId: string | null }
  /** Submitted: the poll scheduler takes the query over. */
  | { outcome: 'submitted'; eventId: null }
  | { outcome: 'stale'; eventId: null };

export interface ConcordanceQueriesDeps {
  /** A worker connection (`maxRetriesPerRequest: null`): BullMQ's. */
  connection: RedisClient;
  /**
   * The connection of the worker's own commands (polls, opt-outs), pipelined automatically (see
   * `commandConnection`).
   * @defaultValue `connection`
   */
  commands?: RedisClient;
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
  /** Called when a query's job ends (tests wait on it); a query that ends in a poll calls {@link ConcordanceQueriesDeps.onPolledOutcome}. */
  onOutcome?: (result: QueryJobResult, data: QueryJobData) => void;
  /** Called when a polled query ends (once its outcome is written). */
  onPolledOutcome?: (outcome: PolledOutcome) => void;
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

/** The lifecycle's rules from `queries.*`. */
export function lifecycleRules(config: Config): LifecycleRules {
  const q = config.queries;
  return {
    deadlineMs: q.poll.deadline_ms,
    resubmitLost: q.resubmit_lost,
    deliverSuperseded: q.deliver_superseded,
    maxStalledCount: q.max_stalled_count,
    authPauseMs: q.auth_pause_ms,
    submitAttempts: q.submit_attempts,
  };
}

/** Hands events to the sink: all at once when it can take a batch. */
async function deliverAll(sink: ResultSink, events: ResultEvent[]): Promise<void> {
  if (sink.deliverMany !== undefined) return sink.deliverMany(events);
  await Promise.all(events.map((event) => sink.deliver(event)));
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
  /** The partition's poll scheduler (started with the worker unless `autorun` is false). */
  poller: PollScheduler;
  /** Stops the due-set dispatcher and the poll scheduler (their work in flight is written back). */
  stop(): Promise<void>;
}> {
  const { config, client, state, records, crosswalk, sink, prefix, connection, metrics } = deps;
  const now = deps.now ?? Date.now;
  const schedule = pollOptions(config);
  const rules = lifecycleRules(config);
  const keySpace = deps.keySpace ?? prefix;
  const demographics =
    deps.demographics ?? new DemographicsWait({ redis: connection, prefix: keySpace });
  const queue = new Queue(CONCORDANCE_QUERIES, {
    connection,
    prefix,
    defaultJobOptions: queryJobOptions(config.queries),
  });
  const authPause = new AuthPause(queue, connection, prefix);
  const consent = new PatientConsent({ redis: deps.commands ?? connection, prefix: keySpace });
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

  const commands = deps.commands ?? connection;
  const polls = new PollSet({
    redis: commands,
    prefix,
    holdKey: holdKey(prefix),
    pauseKey: authPause.flag,
    latencyWindow: config.queries.polling.latency_window,
  });
  const profiles = new LatencyProfiles({ source: polls, now });
  // Submitted queries are polled from the partition's due set of polls, in batches.
  const poller = new PollScheduler({
    polls,
    profiles,
    rules,
    schedule,
    polling: config.queries.polling,
    logger: deps.logger,
    ...(metrics === undefined ? {} : { metrics }),
    now,
    ...(deps.onPolledOutcome === undefined ? {} : { onOutcome: deps.onPolledOutcome }),
    ports: {
      async poll(remoteJobId, signal) {
        try {
          return (
            pollAnswerOf(await client.concordance.get(remoteJobId, { signal }), false) ?? {
              kind: 'error',
            }
          );
        } catch (err) {
          const answer = pollAnswerOf(err, true);
          if (answer === undefined) throw err;
          return answer;
        }
      },
      localIdOf: (psid) => crosswalk.localIdOf(psid),
      deliver: (events) => deliverAll(sink, events),
      async resubmit(queries) {
        await queue.addBulk(
          queries.map((data) => ({
            name: 'query',
            data,
            opts: {
              jobId: `${queryJobId(data.patientServiceId, data.ccsrCategory, data.seq)}-r${data.resubmits}`,
            },
          })),
        );
      },
      pauseForAuth: () => pauseForAuth(deps.logger),
    },
  });

  const logFor = (job: Job, data: QueryJobData) =>
    deps.logger.child({
      query_key: `${data.patientServiceId}/${data.ccsrCategory}`,
      job_id: job.id,
      remote_job_id: data.remoteJobId,
      record_version: data.recordVersion,
      attempts: job.attemptsStarted,
    });

  /** Ends a query with its result event (or without one, superseded), as decided. */
  async function ended(
    job: Job,
    data: QueryJobData,
    decision: EndDecision | ForgetDecision,
  ): Promise<QueryJobResult> {
    let eventId: string | null = null;
    if (decision.kind === 'end') {
      const event = resultEvent(data, {
        outcome: decision.outcome,
        ...(decision.concordance === undefined ? {} : { concordance: decision.concordance }),
        ...(decision.failure === undefined ? {} : { failure: decision.failure }),
        patientId: (await crosswalk.localIdOf(data.patientServiceId)) ?? null,
        now: new Date(now()),
      });
      await sink.deliver(event);
      eventId = event.id;
    }
    await state.finish(data.patientServiceId, data.ccsrCategory, data.seq);
    const outcome = decision.kind === 'end' ? decision.outcome : 'superseded';
    if (deps.logger.isLevelEnabled('info')) {
      logFor(job, data).info(
        {
          outcome,
          error_code: decision.kind === 'end' ? decision.failure?.code : undefined,
          exec_ms: now() - job.timestamp,
        },
        decision.kind === 'end' ? 'query finished' : 'query superseded by a newer one',
      );
    }
    const result: QueryJobResult = { outcome, eventId };
    metrics?.queriesFinished.inc({ outcome: decision.countAs });
    deps.onOutcome?.(result, data);
    return result;
  }

  /** Something that concerns every query (429, a refused key) holds the queue, not this job. */
  async function holdQueue(
    job: Job,
    data: QueryJobData,
    token: string | undefined,
    hold: HoldDecision,
  ): Promise<never> {
    if (hold.reason === 'rate_limited') {
      const ms = hold.ms;
      logFor(job, data).warn({ retry_after_ms: ms }, 'service rate limit: holding the queue');
      await queue.rateLimit(ms);
      throw new RateLimitError();
    }
    await pauseForAuth(logFor(job, data));
    return waitUntil(job, token, hold.until);
  }

  async function pauseForAuth(log: Logger): Promise<void> {
    if (await authPause.pause('ERR_SERVICE_AUTH')) {
      log.error(
        'the service refused the API key: queue paused until a worker starts with a valid key',
      );
    }
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
      return ended(job, data, {
        kind: 'end',
        outcome: 'failed',
        countAs: 'failed',
        failure: {
          code: RECORD_WAITING_EXPIRED,
          message: `no birth date arrived within ${config.queries.demographics_wait_s} s; not sent`,
        },
      });
    }
    if (decision.kind === 'replaced') {
      // A newer query waits for the birth date.
      return ended(job, data, { kind: 'forget', countAs: 'superseded' });
    }
    logFor(job, data).info(
      { until: new Date(decision.until).toISOString() },
      'query waits for a birth date',
    );
    return waitUntil(job, token, decision.until);
  }

  /** Carries out what the lifecycle decided for a failed submission. */
  async function afterSubmitFailure(
    job: Job,
    data: QueryJobData,
    token: string | undefined,
    err: unknown,
  ): Promise<QueryJobResult> {
    const failure = submitFailureOf(err);
    if (failure === undefined) throw err;
    const decision = decideSubmitFailure(failure, job.attemptsMade + 1, rules, now());
    if (failure.kind !== 'birth_date_missing' && failure.kind !== 'refused') {
      // Answered without a job, or no answer: this attempt is over.
      await state.abandonSubmission(data.patientServiceId, data.ccsrCategory, data.seq);
    }
    if (decision.kind === 'wait_demographics') return waitForDemographics(job, data, token);
    if (decision.kind === 'end') return ended(job, data, decision);
    if (decision.kind === 'hold') return holdQueue(job, data, token, decision);
    if (mayHaveReachedService(err)) {
      metrics?.possibleDuplicates.inc({
        reason: err instanceof ServiceTimeoutError ? 'timeout' : 'connection_lost',
      });
    }
    throw err;
  }

  async function submit(
    job: Job,
    data: QueryJobData,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<QueryJobResult> {
    const psid = data.patientServiceId;
    const [superseded, stored, localId] = await Promise.all([
      state.isSuperseded(psid, data.ccsrCategory, data.seq),
      records.get(psid),
      crosswalk.localIdOf(psid),
    ]);
    const hasRecord =
      stored !== undefined &&
      (stored.record !== undefined || stored.clinical !== undefined) &&
      localId !== undefined;
    const before = decideBeforeSubmit({ optedOut: false, superseded, hasRecord }, rules);
    if (before !== undefined) return ended(job, data, before);
    if (stored === undefined || localId === undefined) throw new Error('unreachable');
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
        // An earlier run stored the remote job but died before its job ended: it is polled.
        return { outcome: 'submitted', eventId: null };
      }
      if (begun.interrupted) metrics?.possibleDuplicates.inc({ reason: 'worker_restart' });
      sentAt = now();
      ({ jobId: remoteJobId } = await client.concordance.submit(
        { assembled_patient: payload, ccsr_category: data.ccsrCategory },
        { signal },
      ));
    } catch (err) {
      return afterSubmitFailure(job, withVersion, token, err);
    }
    // The remote job is stored in the one step that learns it, with its first poll: from here on
    // the query is never submitted again, whatever happens to this process, and the poll
    // scheduler takes it over.
    const submittedAt = now();
    const remote: RemoteJob = {
      remoteJobId,
      submittedAt,
      resubmits: data.resubmits,
      recordVersion: stored.version,
      queryId: data.queryId,
      polls: 0,
    };
    const firstPollAt =
      submittedAt + adaptiveDelayMs(0, 0, profiles.get(data.ccsrCategory), schedule);
    await state.markSubmitted(psid, data.ccsrCategory, data.seq, remote, firstPollAt);
    metrics?.submitWindow.observe((submittedAt - sentAt) / 1_000);
    if (deps.logger.isLevelEnabled('info')) {
      logFor(job, { ...withVersion, remoteJobId }).info(
        { queued_ms: submittedAt - job.timestamp },
        'query submitted',
      );
    }
    void profiles.refresh([data.ccsrCategory]).catch(() => undefined);
    return { outcome: 'submitted', eventId: null };
  }

  /**
   * A job of the design before the poll scheduler (polled by delayed jobs): its query moves to the
   * due set of polls, due now, and the job ends.
   */
  async function adoptPolling(data: QueryJobData): Promise<QueryJobResult> {
    const remote: RemoteJob = {
      remoteJobId: data.remoteJobId ?? '',
      submittedAt: data.submittedAt ?? now(),
      resubmits: data.resubmits,
      recordVersion: data.recordVersion ?? 0,
      queryId: data.queryId,
      polls: data.polls,
    };
    await state.markSubmitted(data.patientServiceId, data.ccsrCategory, data.seq, remote, now());
    return { outcome: 'submitted', eventId: null };
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
      // Opted out after ingest opened the query: it is not sent.
      const optedOut = await consent.isOptedOut(data.patientServiceId);
      const before = decideBeforeSubmit({ optedOut, superseded: false, hasRecord: true }, rules);
      if (before !== undefined) return ended(job, data, before);
    }
    return data.step === 'submitting' ? submit(job, data, token, signal) : adoptPolling(data);
  }

  /**
   * A query that ends because of an error nothing above expected (or a job BullMQ failed itself,
   * such as one that stalled too often) still ends with a `failed` event.
   */
  async function failUnexpectedly(job: Job, err: { name: string; message: string }) {
    const parsed = QueryJobDataSchema.safeParse(job.data);
    if (!parsed.success) return;
    const stalled = /stalled/i.test(err.message);
    await ended(job, parsed.data, {
      kind: 'end',
      outcome: 'failed',
      countAs: 'failed',
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
  if (deps.autorun ?? true) {
    dispatcher.start();
    poller.start();
  }
  return {
    name: CONCORDANCE_QUERIES,
    queue,
    worker,
    poller,
    async stop() {
      await Promise.all([dispatcher.close(), poller.close()]);
    },
  };
}
