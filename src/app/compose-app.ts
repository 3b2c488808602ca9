import { Queue } from 'bullmq';
import type { Registry } from 'prom-client';
import type { Config } from '../config/config-schema.ts';
import { configSlices, type ConfigSlices } from '../config/config-slices.ts';
import { serviceClientOptions } from '../config/service-client-options.ts';
import { StartupError } from '../config/startup-error.ts';
import type { KeptResults } from '../cds/kept-results.ts';
import { createDeliveryRouter, type DeliveryRouting } from '../delivery/create-delivery-router.ts';
import { DeadLetterStore } from '../delivery/dead-letter-store.ts';
import { deploymentQueues } from '../delivery/deployment-queues.ts';
import { outboundKeyringOf } from '../delivery/outbound-keyring.ts';
import { OutboundQueueChannel } from '../delivery/outbound-queue-channel.ts';
import { OutboundQueueMetrics } from '../delivery/outbound-queue-metrics.ts';
import type { ResultSink } from '../delivery/result-sink.ts';
import { keptResultsOf, patientAdminFor } from './patient-admin-for.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import { keyringOf, type CrosswalkKeyring } from '../identity/crosswalk-keyring.ts';
import { Crosswalk } from '../identity/crosswalk.ts';
import { buildIngestApp, type IngestDeps } from '../ingest/build-ingest-app.ts';
import { fhirPatientKeySystems } from '../config/patient-key.ts';
import { ClinicalUpdates } from '../ingest/clinical-updates.ts';
import { EventTracker } from '../ingest/fhir/event-tracker.ts';
import { FhirClient } from '../ingest/fhir/fhir-client.ts';
import { FhirIngest } from '../ingest/fhir/fhir-ingest.ts';
import { FhirMetrics } from '../ingest/fhir/fhir-metrics.ts';
import { PatientLocator } from '../ingest/patient-locator.ts';
import type { QueueViewSource } from '../ingest/queue-view/queue-view-source.ts';
import { UpdateCommitter } from '../ingest/update-committer.ts';
import type { Logger } from '../observability/logger.ts';
import { FeedMetrics } from '../observability/feed-metrics.ts';
import { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import { processRegistry } from '../observability/process-registry.ts';
import { tracingOff, type TracingHandle } from '../observability/tracing/start-tracing.ts';
import { ServiceHealth } from '../observability/service-health.ts';
import { PresetStore } from '../presets/preset-store.ts';
import { PollListing } from '../queries/poll-listing.ts';
import { MessageTraceReader } from '../trace/message-trace-reader.ts';
import type { PolledOutcome } from '../queries/poll-scheduler.ts';
import { queryJobOptions } from '../queries/query-job.ts';
import { QueryScheduler } from '../queries/query-scheduler.ts';
import { noteServiceAnswer } from '../queries/query-spans.ts';
import { QueryState } from '../queries/query-state.ts';
import type { SubmitOutcome } from '../queries/query-submission.ts';
import { Partitions } from '../queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../queues/queue-names.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import type { DemographicsWait } from '../records/demographics-wait.ts';
import { RecordStore } from '../records/record-store.ts';
import {
  createServiceClient,
  type ServiceClient,
  type ServiceClientOptions,
} from '../service/create-service-client.ts';
import { ProblemTerminology } from '../terminology/problem-terminology.ts';
import {
  initConcordanceQueriesWorker,
  type ConcordanceQueries,
} from '../../workers/concordance-queries.ts';
import { initWebhookDeliveriesWorker } from '../../workers/webhook-deliveries.ts';

/**
 * The crosswalk keyring from `identity.crosswalk_keys` (`CROSSWALK_KEYS`) or `identity.crosswalk_key`
 * (`CROSSWALK_KEY`, a keyring of one); a clear start-up error when neither is set.
 */
export function crosswalkKeysFrom(config: Pick<Config, 'identity'>): CrosswalkKeyring {
  const keyring = keyringOf(config.identity);
  if (keyring === undefined) {
    throw new StartupError(
      'CROSSWALK_KEY is not set: it encrypts the patient id crosswalk and the stored records. ' +
        'Generate one with `openssl rand -base64 32` and keep it safe: without it the crosswalk cannot be read.',
    );
  }
  return keyring;
}

/** The partitions a worker process serves: `worker.partitions`, else every one. */
export function servedPartitions(config: Pick<Config, 'worker' | 'redis'>): number[] {
  return config.worker.partitions ?? Array.from({ length: config.redis.partitions }, (_, p) => p);
}

export interface ComposeOptions {
  /** The connection the stores use (a request connection for ingest, a worker's for work). */
  redis: RedisClient;
  /** @defaultValue derived from `identity.crosswalk_key` (see {@link crosswalkKeysFrom}) */
  keys?: CrosswalkKeys;
  /**
   * The process's metrics registry; roles sharing one process pass the same one.
   * @defaultValue a registry of its own, with the default process metrics
   */
  registry?: Registry;
  /**
   * The process's tracing (`startTracing`, started once per process by the role).
   * @defaultValue off (the API's no-op tracer)
   */
  tracing?: TracingHandle;
}

/** What {@link App.queryEngine} needs besides what the app holds. */
export interface QueryEngineOptions {
  /** A worker connection for the partition's own commands (see `commandConnection`). */
  connection: RedisClient;
  partition: number;
  client: ServiceClient;
  /** Where results go (the delivery router, or a test's sink). */
  sink: ResultSink;
  /** @defaultValue the app's logger */
  logger?: Logger;
  demographics?: DemographicsWait;
  onSubmitOutcome?: (outcome: SubmitOutcome) => void;
  onPolledOutcome?: (outcome: PolledOutcome) => void;
  /** @defaultValue true */
  autorun?: boolean;
}

/**
 * The composition root: builds the app's parts from the validated configuration, in one place,
 * for every way it runs — `ingest`, `work` and `start` (src/runtime), the CLI's admin commands,
 * the tests (test/support/pipeline-harness.ts), the bench and, through the CLI, the demo. The
 * configuration is cut here, once, into typed slices ({@link configSlices}); the parts below get
 * their slice and never the whole tree.
 */
export class App {
  readonly config: Config;
  readonly slices: ConfigSlices;
  readonly logger: Logger;
  readonly redis: RedisClient;
  /** The configured prefix (`redis.prefix`): partition 0's, and that of what is no patient's. */
  readonly prefix: string;
  /** The partitions of the patients' keys (`redis.partitions`; one is the prefix alone). */
  readonly partitions: Partitions;
  readonly keys: CrosswalkKeys;
  readonly crosswalk: Crosswalk;
  readonly records: RecordStore;
  readonly state: QueryState;
  readonly presets: PresetStore;
  /** The process's registry: what its `/metrics` serves. */
  readonly metrics: Registry;
  /** The `cw_` pipeline metrics on {@link App.metrics}. */
  readonly pipelineMetrics: PipelineMetrics;
  /** The outbound queue's consumer-lag metrics, on the same registry. */
  readonly outboundMetrics: OutboundQueueMetrics;
  /**
   * The service's health as this process's requests find it (`cw_service_up`, the warn lines of
   * failing requests), fed by every {@link App.serviceClient}.
   */
  readonly serviceHealth: ServiceHealth;
  /**
   * The process's OpenTelemetry tracing (docs/opentelemetry.md): its `tracer`, and the
   * `bullmqTelemetry` of the queues and workers; off (no-op tracer, no telemetry) unless given.
   */
  readonly tracing: TracingHandle;

  private constructor(config: Config, logger: Logger, options: ComposeOptions) {
    const { redis } = options;
    this.config = config;
    this.slices = configSlices(config);
    this.logger = logger;
    this.redis = redis;
    this.prefix = config.redis.prefix;
    this.partitions = Partitions.of(config.redis);
    const prefix = this.partitions;
    this.keys = options.keys ?? crosswalkKeysFrom(config);
    const keys = this.keys;
    this.crosswalk = new Crosswalk({ redis, prefix, keys });
    this.records = new RecordStore({ redis, prefix, keys });
    this.state = new QueryState({ redis, prefix });
    this.presets = new PresetStore({ redis, prefix });
    this.metrics = options.registry ?? processRegistry();
    this.pipelineMetrics = new PipelineMetrics(this.metrics);
    this.outboundMetrics = new OutboundQueueMetrics(this.metrics);
    this.serviceHealth = new ServiceHealth({ registry: this.metrics, logger });
    this.tracing = options.tracing ?? tracingOff();
  }

  /** The tracer of the ingest's spans when tracing is on; undefined when off (no span work). */
  get #ingestTracer() {
    return this.tracing.enabled ? this.tracing.tracer : undefined;
  }

  /**
   * Builds the app. The keys are derived before anything else, so that a missing
   * `CROSSWALK_KEY` is reported before any part is built.
   */
  static compose(config: Config, logger: Logger, options: ComposeOptions): App {
    return new App(config, logger, options);
  }

  /** The Clinical Graph Service client (`service.*`), counting every response in the metrics. */
  serviceClient(extra: Partial<ServiceClientOptions> = {}): ServiceClient {
    return createServiceClient(
      serviceClientOptions(this.slices.service, {
        logger: this.logger,
        onResponse: (info) => {
          this.pipelineMetrics.observeServiceResponse(info);
          this.serviceHealth.observe(info);
          // The answer's status on the query's `cgs.submit` / `cgs.poll` span (tracing on).
          noteServiceAnswer(info.status);
        },
        ...extra,
      }),
    );
  }

  /** Opens queries (the coalescing scheduler ingest uses, `queries.debounce_ms`). */
  queryScheduler(): QueryScheduler {
    return new QueryScheduler({ state: this.state, debounceMs: this.config.queries.debounce_ms });
  }

  /**
   * The `concordance-queries` queue of one partition (one job per query, from its debounce to its
   * submission), as ingest's purges and the CLI open it.
   */
  queriesQueue(connection: RedisClient, partition = 0): Queue {
    return new Queue(CONCORDANCE_QUERIES, {
      connection,
      prefix: this.partitions.prefixAt(partition),
      defaultJobOptions: queryJobOptions(this.config.queries),
    });
  }

  /** {@link App.queriesQueue} of every partition (index = partition). */
  queriesQueues(connection: RedisClient): Queue[] {
    return this.partitions.prefixes.map((_, p) => this.queriesQueue(connection, p));
  }

  /** The outbound queue channel on its own (tests, bench); needs `OUTBOUND_KEY` or `OUTBOUND_KEYS`. */
  outboundChannel(connection: RedisClient): OutboundQueueChannel {
    const outbound = this.config.delivery.outbound_queue;
    const keys = outboundKeyringOf(outbound);
    if (keys === undefined) {
      throw new StartupError(
        'OUTBOUND_KEY is not set: the outbound queue seals patient_id with it',
      );
    }
    return new OutboundQueueChannel({
      connection,
      prefix: this.prefix,
      name: outbound.name,
      retention: outbound.retention,
      key: keys,
    });
  }

  /**
   * What ingest applies each message with: the record and its queries in one script.
   * @param registry Where `cw_queries_enqueued_total` and the other ingest counters go.
   *   @defaultValue the app's registry
   */
  committer(registry: Registry = this.metrics): UpdateCommitter {
    return UpdateCommitter.fromConfig({
      config: this.slices.ingest,
      redis: this.redis,
      records: this.records,
      presets: this.presets,
      registry,
      keySpace: this.partitions,
      keys: this.keys,
      tracer: this.#ingestTracer,
    });
  }

  /** Problem codes to ICD-10-CM (`terminology.*`). */
  terminology(): ProblemTerminology {
    return ProblemTerminology.fromConfig({
      config: this.slices.terminology,
      redis: this.redis,
      registry: this.metrics,
    });
  }

  /**
   * The ingest's parts: the committer, the terminology, the one crosswalk cache of every feed of
   * the process (`ingest.crosswalk_cache`) and the clinical feeds' updates.
   */
  ingestParts(): Pick<IngestDeps, 'committer' | 'terminology'> & {
    locator: PatientLocator;
    updates: ClinicalUpdates;
  } {
    const committer = this.committer();
    const terminology = this.terminology();
    const locator = PatientLocator.fromConfig({
      config: this.slices.ingest,
      crosswalk: this.crosswalk,
      registry: this.metrics,
    });
    const updates = ClinicalUpdates.fromDeps({
      config: this.slices.ingest,
      crosswalk: this.crosswalk,
      records: this.records,
      committer,
      terminology,
      locator,
    });
    return { committer, terminology, locator, updates };
  }

  /**
   * The FHIR feed's Bundle path on the app's stores, for the Bulk Data import
   * (`import bulk-fhir`): the same patient identity (`fhir.patient_identifier_system`,
   * `identity.patient_key`), mapping and commit as the FHIR routes; no message trace (an import is
   * no message: its summary is its account).
   */
  fhirIngest(updates: ClinicalUpdates): FhirIngest {
    return new FhirIngest({
      updates,
      tracker: new EventTracker({ redis: this.redis, prefix: this.prefix }),
      client: FhirClient.fromConfig(this.config),
      patientIdentifierSystems: fhirPatientKeySystems(this.config),
      metrics: new FhirMetrics(this.metrics),
    });
  }

  /**
   * Purge and opt-out (`ADMIN_TOKENS`), erasing every store patientAdminFor lists; `queues` are
   * the query queues of every partition ({@link App.queriesQueues}). `close()` closes what it
   * opened.
   */
  patientAdmin(queues: readonly Queue[]): ReturnType<typeof patientAdminFor> {
    return patientAdminFor({
      config: this.config,
      redis: this.redis,
      keys: this.keys,
      logger: this.logger,
      queues,
    });
  }

  /**
   * What the operator's queue view shows, opened on `connection` (the ingest's queue connection):
   * the deployment's queues as `status` lists them, opened for reading only (no meta update),
   * each partition's dead letters, each partition's queries being polled and the message trace
   * (the Messages pages). Undefined unless
   * `admin.queue_view.enabled`.
   */
  queueView(connection: RedisClient): QueueViewSource | undefined {
    if (!this.config.admin.queue_view.enabled) return undefined;
    const opened = new Map<string, Queue>();
    const open = (name: string, prefix: string) => {
      const key = `${prefix}:${name}`;
      let queue = opened.get(key);
      if (queue === undefined) {
        queue = new Queue(name, { connection, prefix, skipMetasUpdate: true });
        // Its errors are the shared connection's (reported by the process's outage log).
        queue.on('error', () => undefined);
        opened.set(key, queue);
      }
      return queue;
    };
    const retentionDays = this.config.delivery.dead_letters.retention_days;
    return {
      partitions: this.partitions.count,
      queues: async () =>
        (await deploymentQueues(this.config, connection, this.partitions)).map(
          ({ name, partition }) => {
            const prefix = this.partitions.prefixAt(partition);
            return { partition, prefix, queue: open(name, prefix) };
          },
        ),
      deadLetters: this.partitions.prefixes.map((prefix, partition) => ({
        partition,
        prefix,
        store: new DeadLetterStore({ redis: connection, prefix, retentionDays }),
      })),
      polls: this.partitions.prefixes.map((prefix, partition) => ({
        partition,
        prefix,
        listing: new PollListing({ redis: connection, prefix }),
      })),
      messages: {
        reader: new MessageTraceReader({ redis: connection, space: this.partitions }),
        traceEnabled: this.config.trace.enabled,
      },
      async close() {
        for (const queue of opened.values()) await queue.close();
      },
    };
  }

  /** The ingest HTTP app on the app's stores (see buildIngestApp). */
  ingestApp(
    parts: Pick<
      IngestDeps,
      'committer' | 'terminology' | 'locator' | 'updates' | 'admin' | 'isReady' | 'queueView'
    >,
  ) {
    return buildIngestApp({
      config: this.slices.ingest,
      redis: this.redis,
      crosswalk: this.crosswalk,
      records: this.records,
      presets: this.presets,
      logger: this.logger,
      metrics: { registry: this.metrics },
      tracer: this.#ingestTracer,
      ...(this.config.cds_hooks.enabled ? { keptResults: this.keptResults() } : {}),
      ...parts,
    });
  }

  /** The results kept for the CDS Hooks service, on `connection` (see keptResultsOf). */
  keptResults(connection: RedisClient = this.redis): KeptResults {
    return keptResultsOf(this.config, connection, this.keys);
  }

  /**
   * The delivery router and the channels `delivery.*` enables (throws a DeliveryConfigError when
   * none is usable).
   */
  deliveryRouter(connection: RedisClient): DeliveryRouting {
    return createDeliveryRouter({
      config: this.slices.delivery,
      connection,
      prefix: this.partitions,
      keys: this.keys,
      logger: this.logger,
      metrics: this.pipelineMetrics,
      outboundMetrics: this.outboundMetrics,
      feeds: new FeedMetrics(this.metrics),
      telemetry: this.tracing.bullmqTelemetry,
      // The latest results for the CDS Hooks service, kept as they are delivered.
      ...(this.config.cds_hooks.enabled ? { keeper: this.keptResults(connection) } : {}),
    });
  }

  /** The concordance queries of one partition: its outbox relay, submission worker and poller. */
  queryEngine(options: QueryEngineOptions): Promise<ConcordanceQueries> {
    const { partition, ...rest } = options;
    return initConcordanceQueriesWorker({
      ...rest,
      prefix: this.partitions.prefixAt(partition),
      partition,
      tracing: this.tracing,
      keySpace: this.partitions,
      config: this.slices.queries,
      state: this.state,
      records: this.records,
      crosswalk: this.crosswalk,
      logger: options.logger ?? this.logger,
      metrics: this.pipelineMetrics,
      feeds: new FeedMetrics(this.metrics),
    });
  }

  /** The webhook deliveries' worker of one partition (`delivery.webhook.*`). */
  webhookDeliveries(connection: RedisClient, partition: number, logger: Logger = this.logger) {
    const prefix = this.partitions.prefixAt(partition);
    return initWebhookDeliveriesWorker({
      config: this.slices.delivery,
      connection,
      prefix,
      keys: this.keys,
      logger,
      metrics: this.pipelineMetrics,
      feeds: new FeedMetrics(this.metrics),
      tracing: this.tracing,
      deadLetters: new DeadLetterStore({
        redis: connection,
        prefix,
        keys: this.keys,
        retentionDays: this.config.delivery.dead_letters.retention_days,
      }),
    });
  }
}
