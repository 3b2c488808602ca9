import { setTimeout as delay } from 'node:timers/promises';
import {
  DelayedError,
  MetricsTime,
  Queue,
  UnrecoverableError,
  Worker,
  type Job,
  type Processor,
  type Telemetry,
} from 'bullmq';
import type { Logger } from 'pino';
import { trace } from '@opentelemetry/api';
import type { TracingHandle } from '../src/observability/tracing/start-tracing.ts';
import { QuerySpans, statusOf } from '../src/queries/query-spans.ts';
import type { QueriesSlice } from '../src/config/config-slices.ts';
import type { ResultEvent } from '../src/interface/result-event.ts';
import type { ResultSink } from '../src/delivery/result-sink.ts';
import type { Crosswalk } from '../src/identity/crosswalk.ts';
import type { FeedMetrics } from '../src/observability/feed-metrics.ts';
import type { PipelineMetrics } from '../src/observability/pipeline-metrics.ts';
import { LatencyProfiles } from '../src/queries/latency-profiles.ts';
import { OutboxRelay, type OutboxEntry } from '../src/queries/outbox-relay.ts';
import type { PollScheduleOptions } from '../src/queries/poll-schedule.ts';
import { PollScheduler, type PolledOutcome } from '../src/queries/poll-scheduler.ts';
import { holdKey, PollSet } from '../src/queries/poll-set.ts';
import {
  queryJobOptions,
  submissionJobId,
  SubmissionJobDataSchema,
  type SubmissionJobData,
} from '../src/queries/query-job.ts';
import type { LifecycleRules } from '../src/queries/query-lifecycle.ts';
import type { QueryState } from '../src/queries/query-state.ts';
import {
  mayHaveReachedService,
  pollAnswerOf,
  submitFailureOf,
} from '../src/queries/service-answers.ts';
import {
  QuerySubmission,
  type SubmissionStep,
  type SubmitOutcome,
} from '../src/queries/query-submission.ts';
import { queryPreparer } from '../src/queries/query-preparer.ts';
import { SubmissionStore } from '../src/queries/submission-store.ts';
import { dueSetDepth, type DueSetDepth } from '../src/queries/due-set.ts';
import { queryOutboxKey } from '../src/queries/query-outbox.ts';
import { PRESENCE_BEAT_MS, WorkerPresence } from '../src/queries/worker-presence.ts';
import { AuthPause } from '../src/queues/auth-pause.ts';
import type { KeySpace } from '../src/queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../src/queues/queue-names.ts';
import type { RedisClient } from '../src/queues/redis-client.ts';
import { DemographicsWait } from '../src/records/demographics-wait.ts';
import type { RecordStore } from '../src/records/record-store.ts';
import type { ServiceClient } from '../src/service/create-service-client.ts';
import { ServiceTimeoutError } from '../src/service/errors/service-timeout-error.ts';
import { traceTtlSeconds } from '../src/trace/trace-keys.ts';

export type { ResultSink };

export interface ConcordanceQueriesDeps {
  /**
   * A worker connection (`maxRetriesPerRequest: null`): the partition's queries' own commands
   * (claims, polls, opt-outs), best pipelined automatically (see `commandConnection`).
   */
  connection: RedisClient;
  /** The prefix of the partition whose due sets this worker serves. */
  prefix: string;
  /**
   * Where the patients' keys are (opt-outs, demographics waits): the partitions.
   * @defaultValue `prefix` (one partition)
   */
  keySpace?: KeySpace;
  /** `queries.*` and `privacy.*` (see configSlices). */
  config: QueriesSlice;
  client: ServiceClient;
  state: QueryState;
  records: RecordStore;
  crosswalk: Crosswalk;
  sink: ResultSink;
  logger: Logger;
  /** Called when a query ends on the submission side (tests wait on it). */
  onSubmitOutcome?: (outcome: SubmitOutcome) => void;
  /** Called when a polled query ends (once its outcome is written). */
  onPolledOutcome?: (outcome: PolledOutcome) => void;
  /** Finished queries, polls, lateness, resubmissions. */
  metrics?: PipelineMetrics;
  /** `cw_feed_messages_total`: each query sent to the service counts `sent` by its feed. */
  feeds?: FeedMetrics;
  /** @defaultValue true */
  autorun?: boolean;
  /** @defaultValue `Date.now` */
  now?: () => number;
  /** Queries waiting for a birth date. @defaultValue a DemographicsWait on `connection` */
  demographics?: DemographicsWait;
  /** The partition served (the spans' `cw.partition`). */
  partition?: number;
  /**
   * The process's tracing (startTracing): on, each submission is a `cgs.submit` span and each poll
   * a `cgs.poll` span in the message's trace, and the queue and its worker trace their jobs
   * (bullmq-otel). Off or absent, nothing is traced.
   */
  tracing?: Pick<TracingHandle, 'enabled' | 'tracer' | 'bullmqTelemetry'>;
}

/** The spans of the queries' service calls, when tracing is on. */
function querySpansOf(deps: ConcordanceQueriesDeps): QuerySpans | undefined {
  const tracing = deps.tracing;
  if (tracing?.enabled !== true) return undefined;
  return new QuerySpans({
    tracer: tracing.tracer,
    partition: deps.partition,
    service: { host: deps.client.host },
  });
}

/** The `telemetry` option of the queue and its worker (bullmq-otel), when tracing is on. */
function telemetryOf(deps: ConcordanceQueriesDeps): { telemetry?: Telemetry } {
  const telemetry = deps.tracing?.bullmqTelemetry;
  return telemetry === undefined ? {} : { telemetry };
}

/** How long a closing worker waits to remove its presence. */
const PRESENCE_LEAVE_WAIT_MS = 500;

/**
 * The message trace's retention in seconds (`trace.retention_days`), 0 when `trace.enabled` is
 * off: each step's script then writes no trace.
 */
export function traceTtlOf(config: Pick<QueriesSlice, 'trace'>): number {
  return config.trace.enabled ? traceTtlSeconds(config.trace.retention_days) : 0;
}

/** The lifecycle's rules from `queries.*`. */
export function lifecycleRules(config: Pick<QueriesSlice, 'queries'>): LifecycleRules {
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

function pollOptions(config: Pick<QueriesSlice, 'queries'>): PollScheduleOptions {
  const poll = config.queries.poll;
  return {
    firstDelayMs: poll.first_delay_ms,
    factor: poll.factor,
    maxDelayMs: poll.max_delay_ms,
    jitter: poll.jitter,
    deadlineMs: poll.deadline_ms,
  };
}

/** Hands events to the sink: all at once when it can take a batch. */
async function deliverAll(sink: ResultSink, events: ResultEvent[]): Promise<void> {
  if (sink.deliverMany !== undefined) return sink.deliverMany(events);
  await Promise.all(events.map((event) => sink.deliver(event)));
}

/** What a submission job came to (its BullMQ return value): never a patient identifier. */
export type SubmissionJobResult = { remote_job_id: string } | { outcome: string };

/**
 * The processor of the `concordance-queries` queue: runs one query's submission and carries out
 * what it came to with BullMQ's own means — the job completes with the remote job's id; a
 * transient failure is thrown for BullMQ's attempts and backoff; a 429 holds the queue
 * (`queue.rateLimit`) and puts the job back; a refused key pauses the queue (the job waits in
 * it); a wait for a birth date delays the job; a query that failed for good (its event delivered)
 * fails the job with UnrecoverableError. Unit tests call it directly with real jobs.
 */
export function concordanceQueryProcessor(deps: {
  submission: Pick<QuerySubmission, 'run'>;
  queue: Pick<Queue, 'rateLimit'>;
  /** Aborts the submissions in flight (a forced close). */
  signal: AbortSignal;
  logger: Logger;
}): Processor<SubmissionJobData, SubmissionJobResult> {
  return async (job: Job<SubmissionJobData, SubmissionJobResult>, token?: string) => {
    const parsed = SubmissionJobDataSchema.safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError('ERR_QUERY_JOB_DATA: the job does not name a query');
    }
    const data = parsed.data;
    const step = await deps.submission.run(data, data.dueAt, deps.signal, {
      attemptsMade: job.attemptsMade,
      stalledCounter: job.stalledCounter,
    });
    return carryOut(step, job, token, deps);
  };
}

/** Does what a submission came to, as its job. */
async function carryOut(
  step: SubmissionStep,
  job: Job<SubmissionJobData, SubmissionJobResult>,
  token: string | undefined,
  { queue, logger }: { queue: Pick<Queue, 'rateLimit'>; logger: Logger },
): Promise<SubmissionJobResult> {
  switch (step.kind) {
    case 'submitted':
      return { remote_job_id: step.remoteJobId };
    case 'stale':
      return { outcome: 'stale' };
    case 'ended':
      if (step.failure !== undefined) {
        throw new UnrecoverableError(`${step.failure.code}: ${step.failure.message}`);
      }
      return { outcome: step.outcome };
    case 'retry':
      throw step.error;
    case 'rate_limited':
      await queue.rateLimit(step.ms);
      logger.warn({ retry_after_ms: step.ms }, 'service rate limit: holding the queue');
      throw Worker.RateLimitError();
    case 'paused':
      // The queue is paused: the job goes back to wait, where it stays until the pause ends.
      throw Worker.RateLimitError();
    case 'later':
      await job.moveToDelayed(step.at, token);
      throw new DelayedError();
  }
}

/** The concordance queries of one partition, as a worker process runs them. */
export interface ConcordanceQueries {
  name: string;
  /** The partition's `concordance-queries` queue: one job per query, from its debounce to its POST. */
  queue: Queue<SubmissionJobData, SubmissionJobResult>;
  /** Its BullMQ worker: submits the queries. */
  worker: Worker<SubmissionJobData, SubmissionJobResult>;
  /** Moves opened queries from the outbox into the queue. */
  relay: OutboxRelay;
  /** Polls the submitted queries. */
  poller: PollScheduler;
  /** How full the partition's outbox is (for the gauges). */
  outboxDepth(now: number): Promise<DueSetDepth>;
  /** True while the relay and the poller run (for /readyz, with `worker.isRunning()`). */
  running(): boolean;
  /**
   * Stops the relay and the poller (the BullMQ worker is closed by its owner: `worker.close()`, or
   * closeWorker); true when their work in flight was written back within the grace period (else
   * it comes back when its leases run out).
   */
  stop(): Promise<boolean>;
}

/** A limiter's `max` that is never reached: the limiter only carries the 429 holds. */
const UNLIMITED = 1_000_000_000;

/**
 * The concordance queries of one partition: ingest's commit script writes each opened query into
 * the partition's outbox (`qdue`) with the record; the {@link OutboxRelay} moves it into the
 * `concordance-queries` queue as a job delayed by what is left of its debounce; this queue's
 * worker submits it ({@link concordanceQueryProcessor}; a run of the reserved preset `prevent` is
 * made there and then, see docs/prevent.md); the {@link PollScheduler} polls the submitted ones
 * from the partition's poll set (`qpoll`) until they end. Decisions are the pure lifecycle's
 * (src/queries/query-lifecycle.ts); this file plugs in the service client, the stores, BullMQ and
 * the delivery side.
 */
export async function initConcordanceQueriesWorker(
  deps: ConcordanceQueriesDeps,
): Promise<ConcordanceQueries> {
  const { config, client, state, records, crosswalk, sink, prefix, connection, metrics } = deps;
  const now = deps.now ?? Date.now;
  const schedule = pollOptions(config);
  const rules = lifecycleRules(config);
  const traceTtlS = traceTtlOf(config);
  const keySpace = deps.keySpace ?? prefix;
  const demographics =
    deps.demographics ?? new DemographicsWait({ redis: connection, prefix: keySpace });
  const spans = querySpansOf(deps);
  const queue = new Queue<SubmissionJobData, SubmissionJobResult>(CONCORDANCE_QUERIES, {
    connection,
    prefix,
    ...telemetryOf(deps),
  });
  const authPause = new AuthPause(queue, connection, prefix);
  const pauseForAuth = async () => {
    if (await authPause.pause('ERR_SERVICE_AUTH')) {
      deps.logger.error(
        'the service refused the API key: queries paused until a worker starts with a valid key',
      );
    }
  };
  const polls = new PollSet({
    redis: connection,
    prefix,
    holdKey: holdKey(prefix),
    pauseKey: authPause.flag,
    latencyWindow: config.queries.polling.latency_window,
    traceTtlS,
  });
  const profiles = new LatencyProfiles({ source: polls, now });
  const deliver = (events: ResultEvent[]) => deliverAll(sink, events);
  const prepare = queryPreparer({
    config,
    records,
    crosswalk,
    demographics,
    client,
    now,
    ...(metrics === undefined ? {} : { metrics }),
  });
  const optional = <T>(key: string, value: T | undefined) =>
    value === undefined ? {} : { [key]: value };

  const submission = new QuerySubmission({
    store: new SubmissionStore(connection, prefix, traceTtlS),
    profiles,
    rules,
    schedule,
    demographicsWaitS: config.queries.demographics_wait_s,
    logger: deps.logger,
    serviceHost: client.host,
    now,
    spans,
    ...optional('metrics', metrics),
    ...optional('feeds', deps.feeds),
    ...optional('onOutcome', deps.onSubmitOutcome),
    ports: {
      prepare,
      async submit(payload, category, signal) {
        const { jobId } = await client.concordance.submit(
          { assembled_patient: payload, ccsr_category: category },
          { signal },
        );
        return jobId;
      },
      classify: submitFailureOf,
      mayHaveReached: (err) =>
        mayHaveReachedService(err)
          ? err instanceof ServiceTimeoutError
            ? 'timeout'
            : 'connection_lost'
          : undefined,
      submitted: (query, remote, firstPollAt) =>
        state.markSubmitted(
          query.patientServiceId,
          query.ccsrCategory,
          query.seq,
          remote,
          firstPollAt,
          traceTtlS,
        ),
      park: (query, at) =>
        demographics.park(
          query.patientServiceId,
          query.ccsrCategory,
          query.seq,
          at,
          config.queries.demographics_wait_s * 1_000,
        ),
      deliver,
      pauseForAuth,
      localIdOf: (query) => crosswalk.openLocalId(query.patientServiceId, query.sealedLocalId),
    },
  });

  const jobOptions = queryJobOptions(config.queries);
  const relay = new OutboxRelay({
    redis: connection,
    prefix,
    dispatch: config.queries.dispatch,
    logger: deps.logger,
    now,
    traceTtlS,
    async enqueue(entries: readonly OutboxEntry[], at: number) {
      await queue.addBulk(
        entries.map((entry) => ({
          name: entry.ccsrCategory,
          data: {
            patientServiceId: entry.patientServiceId,
            ccsrCategory: entry.ccsrCategory,
            seq: entry.seq,
            resubmits: entry.resubmits,
            dueAt: entry.dueAt,
          },
          opts: {
            ...jobOptions,
            jobId: submissionJobId(entry),
            ...(entry.dueAt > at ? { delay: entry.dueAt - at } : {}),
          },
        })),
      );
    },
  });

  const poller = new PollScheduler({
    polls,
    profiles,
    rules,
    schedule,
    polling: config.queries.polling,
    logger: deps.logger,
    serviceHost: client.host,
    now,
    spans,
    ...optional('metrics', metrics),
    ...optional('onOutcome', deps.onPolledOutcome),
    ports: {
      async poll(remoteJobId, signal) {
        try {
          return (
            pollAnswerOf(await client.concordance.get(remoteJobId, { signal }), false) ?? {
              kind: 'error',
            }
          );
        } catch (err) {
          // The service's answer on the poll's span (none when tracing is off).
          const status = statusOf(err);
          if (status !== undefined) {
            trace.getActiveSpan()?.setAttribute('http.response.status_code', status);
          }
          const answer = pollAnswerOf(err, true);
          if (answer === undefined) throw err;
          return answer;
        }
      },
      localIdOf: (psid) => crosswalk.localIdOf(psid),
      deliver,
      pauseForAuth,
    },
  });

  // A worker starts with the key it was given: if the queries were paused because the service
  // refused a key, this one deserves a try.
  if (await authPause.resumeIfPaused()) {
    deps.logger.warn('resumed the queries, paused earlier for a refused API key');
  }

  const closing = new AbortController();
  const lease = config.queries.dispatch.lease_ms;
  const worker = new Worker<SubmissionJobData, SubmissionJobResult>(
    CONCORDANCE_QUERIES,
    concordanceQueryProcessor({ submission, queue, signal: closing.signal, logger: deps.logger }),
    {
      connection,
      prefix,
      concurrency: config.queries.concurrency,
      autorun: false,
      // A killed worker's submissions come back after the lease, as its polls do.
      lockDuration: lease,
      stalledInterval: lease,
      // The lifecycle ends a query whose workers kept dying with it (ERR_QUERY_STALLED, with its
      // event) one run before BullMQ would fail its job without one.
      maxStalledCount: rules.maxStalledCount + 1,
      // Without a limiter BullMQ ignores the queue's rate limit (`queue.rateLimit` on a 429) in
      // every worker but the one that hit it; this one never limits by itself.
      limiter: { max: UNLIMITED, duration: 1_000 },
      // BullMQ's own metrics (completed and failed jobs per minute, a week of them): what the
      // queue view, Taskforce and `queue.getMetrics` show.
      metrics: { maxDataPoints: MetricsTime.ONE_WEEK },
      ...telemetryOf(deps),
    },
  );
  // Errors of the worker's own Redis calls are retried by BullMQ; they are logged once by the
  // outage watch (run-worker.ts), not here.
  worker.on('error', () => undefined);

  // This worker's presence, which `redis repartition` waits for to go.
  const presence = new WorkerPresence({ redis: connection, prefix });
  let heartbeat: NodeJS.Timeout | undefined;
  let running = false;
  if (deps.autorun ?? true) {
    await presence.beat();
    heartbeat = setInterval(() => void presence.beat().catch(() => undefined), PRESENCE_BEAT_MS);
    heartbeat.unref();
    relay.start();
    void worker.run().catch(() => undefined);
    poller.start();
    running = true;
  }
  return {
    name: CONCORDANCE_QUERIES,
    queue,
    worker,
    relay,
    poller,
    outboxDepth: (at) => dueSetDepth(connection, queryOutboxKey(prefix), at),
    running: () => running,
    async stop() {
      running = false;
      clearInterval(heartbeat);
      // The BullMQ worker is closed by its owner (WorkerRegistry.close, closeWorker: gracefully
      // while Redis answers, forced otherwise); the relay and the poller here.
      const done = (await Promise.all([relay.close(), poller.close()])).every(Boolean);
      if (!done) closing.abort(new Error('closing'));
      // Without Redis the presence cannot be removed: it is not waited for (it expires by
      // itself), and the close counts as forced.
      const left = await Promise.race([
        presence.leave().then(
          () => true,
          () => false,
        ),
        delay(done ? PRESENCE_LEAVE_WAIT_MS : 0, false, { ref: false }),
      ]);
      return done && left;
    },
  };
}
