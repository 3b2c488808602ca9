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
  readonly updateToDelivery: Histogram<'channel'>;
  readonly deliveries: Counter<'channel' | 'outcome'>;
  readonly deadLetters: Counter<'channel'>;
  readonly queueJobs: Gauge<'queue' | 'state'>;

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
    this.queueJobs = reuse(
      registry,
      'cw_queue_jobs',
      () =>
        new Gauge({
          name: 'cw_queue_jobs',
          help: 'Jobs in each queue by state, read from Redis on every scrape.',
          labelNames: ['queue', 'state'],
          registers,
        }),
    );
  }
}
