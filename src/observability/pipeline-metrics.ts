import type { JobType } from 'bullmq';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** An existing metric of the registry (two roles in one process share it), else a new one. */
function reuse<M>(registry: Registry, name: string, make: () => M): M {
  return (registry.getSingleMetric(name) as M | undefined) ?? make();
}

/** How a query ended, as counted (the result event's status, or `superseded`). */
export type FinishedOutcome =
  'completed' | 'failed' | 'lost' | 'timed_out' | 'rejected' | 'superseded';

/** What a delivery attempt came to. */
export type DeliveryOutcome = 'delivered' | 'retried' | 'dead_lettered' | 'suppressed';

/** A queue the `cw_queue_jobs` and `cw_queue_oldest_waiting_seconds` gauges read (a BullMQ `Queue` is one). */
export interface CountedQueue {
  readonly name: string;
  getJobCounts(...types: JobType[]): Promise<Record<string, number>>;
  /** BullMQ's `getJobs(['wait'], 0, 0, true)`: the oldest waiting job (its `timestamp` is its creation). */
  getJobs(
    types: JobType[],
    start: number,
    end: number,
    asc: boolean,
  ): Promise<readonly ({ timestamp: number } | undefined)[]>;
}

/** A queue of one partition (`redis.partitions`), for the gauges' `partition` label. */
export interface PartitionQueue {
  queue: CountedQueue;
  partition: number;
}

/** Answers whether a queue is paused because the service refused the API key (`AuthPause.isPaused`). */
export type AuthPauseProbe = () => Promise<boolean>;

/** Answers whether Redis answers (a PING within a timeout, e.g. `redisAnswers`). */
export type RedisProbe = () => Promise<boolean>;

/** The job states `cw_queue_jobs` reports, every one of them on every scrape (zeros included). */
export const QUEUE_JOB_STATES = [
  'waiting',
  'prioritized',
  'delayed',
  'active',
  'waiting-children',
  'completed',
  'failed',
] as const satisfies readonly JobType[];

/** A scrape does not wait longer than this for one queue's counts (Redis may be unreachable). */
export const QUEUE_COUNT_TIMEOUT_MS = 2_000;

/** One service attempt as `onResponse` reports it (see the service client). */
export interface ServiceResponse {
  endpoint: string;
  status: number | 'network' | 'timeout';
  durationMs: number;
}

/** What the gauges read on a scrape, added by the roles of one process. */
/** How full a due set is (see `dueSetDepth`). */
export interface DueSetDepth {
  size: number;
  due: number;
  oldestDueAt: number | null;
}

/**
 * A partition's due set, as the due-set gauges read it: `submit` (new queries waiting to be
 * submitted) or `poll` (submitted queries waiting for their next poll).
 */
export interface WatchedDueSet {
  set: 'submit' | 'poll';
  partition: number;
  depth(now: number): Promise<DueSetDepth>;
}

interface Watched {
  queues: Set<PartitionQueue>;
  dueSets: Set<WatchedDueSet>;
  /** Probes by queue name (several roles may watch one queue). */
  authPauses: Set<{ queue: string; probe: AuthPauseProbe }>;
  redis: Set<RedisProbe>;
}

/**
 * What each registry's gauges read. Kept per registry, not per {@link PipelineMetrics}: two
 * roles of one process (ingest and work in `start`) share the gauges and each adds its queues.
 */
const watchedBy = new WeakMap<Registry, Watched>();

function watchedOf(registry: Registry): Watched {
  let watched = watchedBy.get(registry);
  if (watched === undefined) {
    watched = { queues: new Set(), dueSets: new Set(), authPauses: new Set(), redis: new Set() };
    watchedBy.set(registry, watched);
  }
  return watched;
}

/** `work` within `ms`, else rejects (Redis may hang: a scrape must not). */
export async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One queue per name and partition (two roles may watch the same queue through two objects).
 */
function byName(queues: Set<PartitionQueue>): PartitionQueue[] {
  const out = new Map<string, PartitionQueue>();
  for (const entry of queues) {
    const key = `${entry.queue.name}|${entry.partition}`;
    if (!out.has(key)) out.set(key, entry);
  }
  return [...out.values()];
}

/** Age in seconds of the oldest job waiting to be picked up (0 when none waits). */
export async function oldestWaitingSeconds(queue: CountedQueue, now = Date.now()): Promise<number> {
  const [oldest] = await queue.getJobs(['wait'], 0, 0, true);
  return oldest === undefined ? 0 : Math.max(0, (now - oldest.timestamp) / 1_000);
}

/**
 * The worker side's metrics (`cw_` prefix); the ingest counters live in ingest-metrics.ts. Label
 * values are closed sets or route templates, never ids, so cardinality stays bounded.
 */
export class PipelineMetrics {
  readonly serviceRequests: Counter<'endpoint' | 'status'>;
  readonly serviceDuration: Histogram<'endpoint'>;
  readonly polls: Counter<'state'>;
  readonly pollLateness: Histogram;
  readonly queriesFinished: Counter<'outcome'>;
  /** Prevent runs (the reserved preset `prevent`) that ended, by outcome; not in queriesFinished. */
  readonly preventRuns: Counter<'outcome'>;
  /** Patients registered with Prevent (`POST /v1/patient`): first runs, and ids the service lost. */
  readonly preventRegistrations: Counter;
  readonly resubmissions: Counter;
  /** Submissions that may have created a remote job twice (see docs/operations.md, the crash window). */
  readonly possibleDuplicates: Counter<'reason'>;
  /** From sending a submission to its remote job id being durable: the duplicate window. */
  readonly submitWindow: Histogram;
  readonly updateToDelivery: Histogram<'channel'>;
  readonly deliveries: Counter<'channel' | 'outcome'>;
  readonly deadLetters: Counter<'channel'>;
  readonly queueJobs: Gauge<'queue' | 'state'>;
  /** Free text kept from the service, by kind (see `FreeTextKind` in strip-free-text.ts). */
  readonly freeTextRemoved: Counter<'kind'>;
  /** Age of each watched queue's oldest waiting job, read from Redis on every scrape. */
  readonly oldestWaiting: Gauge<'queue'>;
  /** 1 while a queue is paused because the service refused the API key, read on every scrape. */
  readonly authPaused: Gauge<'queue'>;
  /** 1 when Redis answered a PING on this scrape, else 0. */
  readonly redisUp: Gauge;
  /** Queries in each partition's due sets (`submit`, `poll`), by state (`scheduled`, `due`). */
  readonly dueSetQueries: Gauge<'set' | 'partition' | 'state'>;
  /** How long the oldest due member of each due set has waited past its time (lateness). */
  readonly dueSetOldestDue: Gauge<'set' | 'partition'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.serviceRequests = reuse(
      registry,
      'cw_service_requests_total',
      () =>
        new Counter({
          name: 'cw_service_requests_total',
          help: 'Requests to the Clinical Graph Service (each attempt), by route template and HTTP status (or network, timeout).',
          labelNames: ['endpoint', 'status'],
          registers,
        }),
    );
    this.serviceDuration = reuse(
      registry,
      'cw_service_request_duration_seconds',
      () =>
        new Histogram({
          name: 'cw_service_request_duration_seconds',
          help: 'Duration of requests to the Clinical Graph Service, by route template.',
          labelNames: ['endpoint'],
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
          registers,
        }),
    );
    this.polls = reuse(
      registry,
      'cw_polls_total',
      () =>
        new Counter({
          name: 'cw_polls_total',
          help: 'Polls of remote concordance jobs, by what the poll found (pending, success, failure, lost, error).',
          labelNames: ['state'],
          registers,
        }),
    );
    this.pollLateness = reuse(
      registry,
      'cw_poll_lateness_seconds',
      () =>
        new Histogram({
          name: 'cw_poll_lateness_seconds',
          help: 'How late a poll ran: actual time minus the time it was scheduled for.',
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          registers,
        }),
    );
    this.queriesFinished = reuse(
      registry,
      'cw_queries_finished_total',
      () =>
        new Counter({
          name: 'cw_queries_finished_total',
          help: 'Concordance queries that ended, by outcome (completed, failed, lost, timed_out, rejected, superseded).',
          labelNames: ['outcome'],
          registers,
        }),
    );
    this.preventRuns = reuse(
      registry,
      'cw_prevent_runs_total',
      () =>
        new Counter({
          name: 'cw_prevent_runs_total',
          help: 'Prevent runs (healthy-behaviour recommendations) that ended, by outcome (completed, failed, rejected, superseded).',
          labelNames: ['outcome'],
          registers,
        }),
    );
    this.preventRegistrations = reuse(
      registry,
      'cw_prevent_registrations_total',
      () =>
        new Counter({
          name: 'cw_prevent_registrations_total',
          help: 'Patients registered with Prevent under their keyed identifier (a first run, or an id the service no longer knew).',
          registers,
        }),
    );
    this.resubmissions = reuse(
      registry,
      'cw_query_resubmissions_total',
      () =>
        new Counter({
          name: 'cw_query_resubmissions_total',
          help: 'Queries submitted again because the service no longer knew their remote job (not_exists).',
          registers,
        }),
    );
    this.possibleDuplicates = reuse(
      registry,
      'cw_possible_duplicate_submissions_total',
      () =>
        new Counter({
          name: 'cw_possible_duplicate_submissions_total',
          help: 'Submissions sent again although an earlier one may have reached the service: after no answer (timeout, reset) or after a worker died while one was under way.',
          labelNames: ['reason'],
          registers,
        }),
    );
    this.submitWindow = reuse(
      registry,
      'cw_submit_window_seconds',
      () =>
        new Histogram({
          name: 'cw_submit_window_seconds',
          help: 'From sending a submission to its remote job id being stored in Redis: a worker killed within this window submits the query again.',
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          registers,
        }),
    );
    this.updateToDelivery = reuse(
      registry,
      'cw_update_to_delivery_seconds',
      () =>
        new Histogram({
          name: 'cw_update_to_delivery_seconds',
          help: 'Seconds from the last record update a result covers to its delivery, by channel.',
          labelNames: ['channel'],
          buckets: [0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600],
          registers,
        }),
    );
    this.deliveries = reuse(
      registry,
      'cw_deliveries_total',
      () =>
        new Counter({
          name: 'cw_deliveries_total',
          help: 'Result deliveries by channel (queue, webhook) and outcome (delivered, retried, dead_lettered, suppressed).',
          labelNames: ['channel', 'outcome'],
          registers,
        }),
    );
    this.deadLetters = reuse(
      registry,
      'cw_dead_letters_total',
      () =>
        new Counter({
          name: 'cw_dead_letters_total',
          help: 'Result events given up on and kept as dead letters, by channel.',
          labelNames: ['channel'],
          registers,
        }),
    );
    this.freeTextRemoved = reuse(
      registry,
      'cw_free_text_removed_total',
      () =>
        new Counter({
          name: 'cw_free_text_removed_total',
          help: 'Pieces of free text removed from records before sending, by kind (display, note, narrative, metadata, field); counted per payload prepared.',
          labelNames: ['kind'],
          registers,
        }),
    );
    const watched = watchedOf(registry);
    const queues = watched.queues;
    this.#watched = watched;
    this.queueJobs = reuse(
      registry,
      'cw_queue_jobs',
      () =>
        new Gauge({
          name: 'cw_queue_jobs',
          help: 'Jobs in each queue by state, read from Redis on every scrape.',
          labelNames: ['queue', 'state', 'partition'],
          registers,
          // Read on scrape, so the numbers are Redis's, not this process's view. A queue whose
          // counts do not come (Redis unreachable) is left out rather than reported stale.
          async collect() {
            const read = await Promise.all(
              byName(queues).map(async ({ queue, partition }) => ({
                name: queue.name,
                partition: String(partition),
                counts: await within(
                  queue.getJobCounts(...QUEUE_JOB_STATES),
                  QUEUE_COUNT_TIMEOUT_MS,
                  `job counts of ${queue.name}`,
                ).catch(() => null),
              })),
            );
            // Replaced in one synchronous step, so that two scrapes at once never mix.
            this.reset();
            for (const { name, partition, counts } of read) {
              if (counts === null) continue;
              for (const state of QUEUE_JOB_STATES)
                this.set({ queue: name, state, partition }, counts[state] ?? 0);
            }
          },
        }),
    );
    this.oldestWaiting = reuse(
      registry,
      'cw_queue_oldest_waiting_seconds',
      () =>
        new Gauge({
          name: 'cw_queue_oldest_waiting_seconds',
          help: 'Age of the oldest job waiting for a worker in each queue (0 when none waits), read from Redis on every scrape.',
          labelNames: ['queue', 'partition'],
          registers,
          async collect() {
            const now = Date.now();
            const read = await Promise.all(
              byName(queues).map(async ({ queue, partition }) => ({
                name: queue.name,
                partition: String(partition),
                seconds: await within(
                  oldestWaitingSeconds(queue, now),
                  QUEUE_COUNT_TIMEOUT_MS,
                  `oldest job of ${queue.name}`,
                ).catch(() => null),
              })),
            );
            this.reset();
            for (const { name, partition, seconds } of read)
              if (seconds !== null) this.set({ queue: name, partition }, seconds);
          },
        }),
    );
    const authPauses = watched.authPauses;
    this.authPaused = reuse(
      registry,
      'cw_queue_auth_paused',
      () =>
        new Gauge({
          name: 'cw_queue_auth_paused',
          help: '1 while the queue is paused because the Clinical Graph Service refused the API key (401/403), else 0; read from Redis on every scrape.',
          labelNames: ['queue'],
          registers,
          async collect() {
            const read = await Promise.all(
              [...authPauses].map(async ({ queue, probe }) => ({
                queue,
                paused: await within(
                  probe(),
                  QUEUE_COUNT_TIMEOUT_MS,
                  `pause flag of ${queue}`,
                ).catch(() => null),
              })),
            );
            // Two roles watching one queue read the same flag: either one saying paused wins.
            const byQueue = new Map<string, number>();
            for (const { queue, paused } of read) {
              if (paused !== null)
                byQueue.set(queue, Math.max(byQueue.get(queue) ?? 0, paused ? 1 : 0));
            }
            this.reset();
            for (const [queue, value] of byQueue) this.set({ queue }, value);
          },
        }),
    );
    // Several roles of a process may watch one partition: the last reading of a partition wins.
    const readDueSets = async () => {
      const now = Date.now();
      const read = await Promise.all(
        [...watched.dueSets].map(async ({ set, partition, depth }) => ({
          set,
          partition: String(partition),
          depth: await within(depth(now), QUEUE_COUNT_TIMEOUT_MS, 'due set depth').catch(
            () => null,
          ),
        })),
      );
      return { now, read };
    };
    this.dueSetQueries = reuse(
      registry,
      'cw_due_set_queries',
      () =>
        new Gauge({
          name: 'cw_due_set_queries',
          help: "Queries in each partition's due sets: `set` submit (new queries waiting to be submitted) or poll (submitted queries waiting for their next poll); `state` scheduled (their time has not come, or a worker holds them) or due (their time has come: a backlog when it grows); read from Redis on every scrape.",
          labelNames: ['set', 'partition', 'state'],
          registers,
          async collect() {
            const { read } = await readDueSets();
            this.reset();
            for (const { set, partition, depth } of read) {
              if (depth === null) continue;
              this.set({ set, partition, state: 'scheduled' }, depth.size - depth.due);
              this.set({ set, partition, state: 'due' }, depth.due);
            }
          },
        }),
    );
    this.dueSetOldestDue = reuse(
      registry,
      'cw_due_set_oldest_due_seconds',
      () =>
        new Gauge({
          name: 'cw_due_set_oldest_due_seconds',
          help: "Seconds the oldest due member of each partition's due set (submit, poll) has waited past its time (0 when none is due): how late the workers are; read from Redis on every scrape.",
          labelNames: ['set', 'partition'],
          registers,
          async collect() {
            const { now, read } = await readDueSets();
            this.reset();
            for (const { set, partition, depth } of read) {
              if (depth === null) continue;
              const oldest = depth.oldestDueAt;
              this.set({ set, partition }, oldest === null ? 0 : Math.max(0, now - oldest) / 1_000);
            }
          },
        }),
    );
    const redisProbes = watched.redis;
    this.redisUp = reuse(
      registry,
      'cw_redis_up',
      () =>
        new Gauge({
          name: 'cw_redis_up',
          help: '1 when every Redis connection of the process answered a PING within 1 s on this scrape, else 0.',
          registers,
          async collect() {
            if (redisProbes.size === 0) {
              this.reset();
              return;
            }
            const answers = await Promise.all(
              [...redisProbes].map((probe) => probe().catch(() => false)),
            );
            this.set(answers.every(Boolean) ? 1 : 0);
          },
        }),
    );
  }

  readonly #watched: Watched;

  /**
   * Adds queues to `cw_queue_jobs` and `cw_queue_oldest_waiting_seconds` (one series set per queue
   * name and partition, whichever role added it; a bare queue is partition 0's); returns a
   * function that takes them out again (call it before closing the queues).
   */
  watchQueues(...queues: (CountedQueue | PartitionQueue)[]): () => void {
    const entries = queues.map((q) => ('queue' in q ? q : { queue: q, partition: 0 }));
    for (const entry of entries) this.#watched.queues.add(entry);
    return () => {
      for (const entry of entries) this.#watched.queues.delete(entry);
    };
  }

  /**
   * Adds partitions' due sets to `cw_due_set_queries` and `cw_due_set_oldest_due_seconds`;
   * returns a function that takes them out again.
   */
  watchDueSets(...sets: WatchedDueSet[]): () => void {
    for (const set of sets) this.#watched.dueSets.add(set);
    return () => {
      for (const set of sets) this.#watched.dueSets.delete(set);
    };
  }

  /** Reports `cw_queue_auth_paused{queue}` from `probe` on every scrape, until the returned function is called. */
  watchAuthPause(queue: string, probe: AuthPauseProbe): () => void {
    const entry = { queue, probe };
    this.#watched.authPauses.add(entry);
    return () => this.#watched.authPauses.delete(entry);
  }

  /** Reports `cw_redis_up` from `probe` on every scrape (0 if any probe of the process fails). */
  watchRedis(probe: RedisProbe): () => void {
    this.#watched.redis.add(probe);
    return () => this.#watched.redis.delete(probe);
  }

  /** Counts one attempt at the service and observes its duration (the client's `onResponse`). */
  observeServiceResponse({ endpoint, status, durationMs }: ServiceResponse): void {
    this.serviceRequests.inc({ endpoint, status: String(status) });
    this.serviceDuration.observe({ endpoint }, durationMs / 1_000);
  }
}
