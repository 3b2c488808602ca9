import { setTimeout as delay } from 'node:timers/promises';
import { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { QueriesSlice } from '../src/config/config-slices.ts';
import type { ResultEvent } from '../src/interface/result-event.ts';
import type { ResultSink } from '../src/delivery/result-sink.ts';
import type { Crosswalk } from '../src/identity/crosswalk.ts';
import type { PipelineMetrics } from '../src/observability/pipeline-metrics.ts';
import { DueQueries, submitHoldKey } from '../src/queries/due-queries.ts';
import { LatencyProfiles } from '../src/queries/latency-profiles.ts';
import { migrateQueryJobs } from '../src/queries/migrate-query-jobs.ts';
import type { PollScheduleOptions } from '../src/queries/poll-schedule.ts';
import { PollScheduler, type PolledOutcome } from '../src/queries/poll-scheduler.ts';
import { holdKey, PollSet } from '../src/queries/poll-set.ts';
import type { LifecycleRules } from '../src/queries/query-lifecycle.ts';
import type { QueryState } from '../src/queries/query-state.ts';
import {
  mayHaveReachedService,
  pollAnswerOf,
  submitFailureOf,
} from '../src/queries/service-answers.ts';
import { SubmitScheduler, type SubmitOutcome } from '../src/queries/submit-scheduler.ts';
import { queryPreparer } from '../src/queries/query-preparer.ts';
import { PRESENCE_BEAT_MS, WorkerPresence } from '../src/queries/worker-presence.ts';
import { AuthPause } from '../src/queues/auth-pause.ts';
import type { KeySpace } from '../src/queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../src/queues/queue-names.ts';
import type { RedisClient } from '../src/queues/redis-client.ts';
import { DemographicsWait } from '../src/records/demographics-wait.ts';
import type { RecordStore } from '../src/records/record-store.ts';
import type { ServiceClient } from '../src/service/create-service-client.ts';
import { ServiceTimeoutError } from '../src/service/errors/service-timeout-error.ts';

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
  /** @defaultValue true */
  autorun?: boolean;
  /** @defaultValue `Date.now` */
  now?: () => number;
  /** Queries waiting for a birth date. @defaultValue a DemographicsWait on `connection` */
  demographics?: DemographicsWait;
}

/** How long a closing worker waits to remove its presence. */
const PRESENCE_LEAVE_WAIT_MS = 500;

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

/** The concordance queries of one partition, as a worker process runs them. */
export interface ConcordanceQueries {
  name: string;
  /**
   * The BullMQ queue of the design before the due sets: a worker drains what it still holds at
   * start (see migrateQueryJobs); the refused-key pause is marked on it.
   */
  queue: Queue;
  submitter: SubmitScheduler;
  poller: PollScheduler;
  /** True while both schedulers run (for /readyz). */
  running(): boolean;
  /**
   * Stops both schedulers; true when their work in flight was written back within the grace
   * period (else it comes back when its leases run out).
   */
  stop(): Promise<boolean>;
}

/**
 * The concordance queries of one partition: a query is opened by ingest in the due set of new
 * queries (`qdue`); the {@link SubmitScheduler} claims due queries in batches and submits them
 * (a run of the reserved preset `prevent` is made there and then, see docs/prevent.md);
 * the {@link PollScheduler} polls the submitted ones from the due set of polls (`qpoll`) until
 * they end. Both decide through the pure lifecycle (src/queries/query-lifecycle.ts); this file
 * only plugs in the service client, the stores and the delivery side.
 */
export async function initConcordanceQueries(
  deps: ConcordanceQueriesDeps,
): Promise<ConcordanceQueries> {
  const { config, client, state, records, crosswalk, sink, prefix, connection, metrics } = deps;
  const now = deps.now ?? Date.now;
  const schedule = pollOptions(config);
  const rules = lifecycleRules(config);
  const keySpace = deps.keySpace ?? prefix;
  const demographics =
    deps.demographics ?? new DemographicsWait({ redis: connection, prefix: keySpace });
  const queue = new Queue(CONCORDANCE_QUERIES, { connection, prefix });
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
  });
  const due = new DueQueries({
    redis: connection,
    prefix,
    holdKey: submitHoldKey(prefix),
    pauseKey: authPause.flag,
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

  const submitter = new SubmitScheduler({
    due,
    profiles,
    rules,
    schedule,
    backoffMs: config.queries.submit_backoff_ms,
    demographicsWaitS: config.queries.demographics_wait_s,
    claiming: { ...config.queries.dispatch, concurrency: config.queries.concurrency },
    logger: deps.logger,
    now,
    ...optional('metrics', metrics),
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

  const poller = new PollScheduler({
    polls,
    profiles,
    rules,
    schedule,
    polling: config.queries.polling,
    logger: deps.logger,
    now,
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
  // Jobs the design before the due sets left in the old queue move to the due sets.
  const moved = await migrateQueryJobs({ queue, redis: connection, state, prefix, now: now() });
  if (moved > 0) deps.logger.warn({ moved }, 'moved query jobs of the old queue to the due sets');

  // This worker's presence, which `redis repartition` waits for to go.
  const presence = new WorkerPresence({ redis: connection, prefix });
  let heartbeat: NodeJS.Timeout | undefined;
  let running = false;
  if (deps.autorun ?? true) {
    await presence.beat();
    heartbeat = setInterval(() => void presence.beat().catch(() => undefined), PRESENCE_BEAT_MS);
    heartbeat.unref();
    submitter.start();
    poller.start();
    running = true;
  }
  return {
    name: CONCORDANCE_QUERIES,
    queue,
    submitter,
    poller,
    running: () => running,
    async stop() {
      running = false;
      clearInterval(heartbeat);
      const done = (await Promise.all([submitter.close(), poller.close()])).every(Boolean);
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
