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

/** A queue the `cw_queue_jobs` gauge reads (a BullMQ `Queue` is one). */
export interface CountedQueue {
  readonly name: string;
  getJobCounts(...types: JobType[]): Promise<Record<string, number>>;
}

/** A queue of one partition (`redis.partitions`), for the gauge's `partition` label. */
export interface PartitionQueue {
  queue: CountedQueue;
  partition: number;
}

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

/**
 * The queues each registry's gauge reads. Kept per registry, not per {@link PipelineMetrics}: two
 * roles of one process (ingest and work in `start`) share the gauge and each adds its queues.
 */
const watchedQueues = new WeakMap<Registry, Set<PartitionQueue>>();

function queuesOf(registry: Registry): Set<PartitionQueue> {
  let queues = watchedQueues.get(registry);
  if (queues === undefined) {
    queues = new Set();
    watchedQueues.set(registry, queues);
  }
  return queues;
}

async function countsWithin(queue: CountedQueue, ms: number): Promise<Record<string, number>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no job counts of ${queue.name} within ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([queue.getJobCounts(...QUEUE_JOB_STATES), late]);
  } finally {
    clearTimeout(timer);
  }
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
  readonly resubmissions: Counter;
  /** Submissions that may have created a remote job twice (see the README's crash safety). */
  readonly possibleDuplicates: Counter<'reason'>;
  /** From sending a submission to its remote job id being durable: the duplicate window. */
  readonly submitWindow: Histogram;
  readonly updateToDelivery: Histogram<'channel'>;
  readonly deliveries: Counter<'channel' | 'outcome'>;
  readonly deadLetters: Counter<'channel'>;
  readonly queueJobs: Gauge<'queue' | 'state'>;
  /** Free text kept from the service, by kind (see `FreeTextKind` in strip-free-text.ts). */
  readonly freeTextRemoved: Counter<'kind'>;

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
    const queues = queuesOf(registry);
    this.#queues = queues;
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
            const byName = new Map<string, PartitionQueue>();
            for (const entry of queues) {
              const key = `${entry.queue.name}|${entry.partition}`;
              if (!byName.has(key)) byName.set(key, entry);
            }
            const read = await Promise.all(
              [...byName.values()].map(async ({ queue, partition }) => ({
                name: queue.name,
                partition: String(partition),
                counts: await countsWithin(queue, QUEUE_COUNT_TIMEOUT_MS).catch(() => null),
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
  }

  readonly #queues: Set<PartitionQueue>;

  /**
   * Adds queues to `cw_queue_jobs` (one series set per queue name and partition, whichever role
   * added it; a bare queue is partition 0's); returns a function that takes them out again (call
   * it before closing the queues).
   */
  watchQueues(...queues: (CountedQueue | PartitionQueue)[]): () => void {
    const entries = queues.map((q) => ('queue' in q ? q : { queue: q, partition: 0 }));
    for (const entry of entries) this.#queues.add(entry);
    return () => {
      for (const entry of entries) this.#queues.delete(entry);
    };
  }

  /** Counts one attempt at the service and observes its duration (the client's `onResponse`). */
  observeServiceResponse({ endpoint, status, durationMs }: ServiceResponse): void {
    this.serviceRequests.inc({ endpoint, status: String(status) });
    this.serviceDuration.observe({ endpoint }, durationMs / 1_000);
  }
}
