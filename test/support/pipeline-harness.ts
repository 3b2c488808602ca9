import type { Job, JobType, Queue } from 'bullmq';
import type { RedisClient } from '../../src/queues/redis-client.ts';
import { Registry } from 'prom-client';
import type { ConcordanceQueries, ResultSink } from '../../workers/concordance-queries.ts';
import type { PolledOutcome } from '../../src/queries/poll-scheduler.ts';
import { queryOutboxKey } from '../../src/queries/query-outbox.ts';
import type { SubmitOutcome } from '../../src/queries/query-submission.ts';

/** How a query ended, as tests read it. */
export interface QueryJobResult {
  outcome: string;
  eventId: string | null;
}
import type { Config } from '../../src/config/config-schema.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { OutboundQueueChannel } from '../../src/delivery/outbound-queue-channel.ts';
import type { ResultEvent } from '../../src/interface/result-event.ts';
import type { AssembledPatient } from '../../src/interface/assembled-patient.ts';
import type { QueryRecord } from '../../src/queries/query-outcome.ts';
import { pollSetKey } from '../../src/queries/poll-set.ts';
import { App } from '../../src/app/compose-app.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../../src/identity/crosswalk-keys.ts';
import type { Crosswalk } from '../../src/identity/crosswalk.ts';
import type { UpdateCommitter } from '../../src/ingest/update-committer.ts';
import type { PipelineMetrics } from '../../src/observability/pipeline-metrics.ts';
import type { QueryScheduler } from '../../src/queries/query-scheduler.ts';
import type { QueryState } from '../../src/queries/query-state.ts';
import type { Partitions } from '../../src/queues/partitions.ts';
import type { RecordStore } from '../../src/records/record-store.ts';
import { workerConnection, type RedisEndpoint } from '../../src/queues/redis-connections.ts';
import type { FaultProfile } from '../../src/simulator/fault-profile.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/start-simulator.ts';
import { captureLogs, type LogCapture } from './log-capture.ts';
import { newOutboundKey, openedEvents } from './outbound.ts';
import { isolatedRedis, testPartitions, testRedisClient, testRedisEndpoint } from './redis.ts';

export const API_KEY = 'pipeline-test-key';

/** Fast settings: a short debounce and quick polls, so tests run in seconds; the outbound queue on. */
export function testConfig(overrides: { queries?: Partial<Config['queries']> } = {}): Config {
  const config = loadConfig({ env: { SERVICE_API_KEY: API_KEY, OUTBOUND_KEY: newOutboundKey() } });
  return {
    ...config,
    // Tests tell submissions apart by a short `metadata.marker`: let it through to the service.
    privacy: {
      ...config.privacy,
      metadata_allowed_keys: [...config.privacy.metadata_allowed_keys, 'marker'],
    },
    delivery: {
      ...config.delivery,
      outbound_queue: { ...config.delivery.outbound_queue, enabled: true },
    },
    queries: {
      ...config.queries,
      debounce_ms: 300,
      poll: { first_delay_ms: 50, factor: 2, max_delay_ms: 200, jitter: 0.2, deadline_ms: 60_000 },
      submit_backoff_ms: 50,
      auth_pause_ms: 100,
      ...overrides.queries,
    },
  };
}

export interface RequestLogEntry {
  method: string;
  path: string;
  status: number;
  headers: Record<string, unknown>;
  body: unknown;
  received_at: number;
  answered_at: number | null;
}

export const sampleRecord = (
  marker: string,
  extra: Partial<AssembledPatient> = {},
): AssembledPatient => ({
  nodes: [
    {
      id: 'c1',
      node_type: 'condition',
      notable: true,
      fhir_id: 'Condition/fhir-c1',
      service_preferred_name: 'Type 2 diabetes mellitus',
      coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }],
      metadata: { marker },
    },
    {
      id: 'o1',
      node_type: 'observation',
      notable: true,
      coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'Hemoglobin A1c' }],
      metadata: { value: 8.1, unit: '%' },
    },
  ],
  relationships: [{ source_id: 'o1', target_id: 'c1' }],
  demographics: { age: 58, gender: 'female', race: 'unknown' },
  ...extra,
});

/**
 * The real pieces of the query pipeline wired together on an isolated Redis prefix, against a
 * real local Clinical Graph Service: the scheduler, the worker and the outbound queue.
 */
export class PipelineHarness {
  /** Ended queries, with the partition whose worker ended them. */
  readonly outcomes: { result: QueryJobResult; data: QueryRecord; partition: number }[] = [];
  readonly #waiters: { count: number; resolve: () => void }[] = [];
  #closers: (() => Promise<unknown>)[] = [];

  readonly config: Config;
  readonly simulator: RunningSimulator;
  readonly redis: RedisClient;
  readonly prefix: string;
  /** The partitions of {@link config} (one unless `start` asked for more). */
  readonly partitions: Partitions;
  /** Where the pipeline's Redis is (the run's, or the one `start` was given). */
  readonly endpoint: RedisEndpoint;
  readonly crosswalk: Crosswalk;
  readonly records: RecordStore;
  readonly state: QueryState;
  readonly scheduler: QueryScheduler;
  /** What ingest applies each message with (record and queries in one script). */
  readonly committer: UpdateCommitter;
  /** Partition 0's query queue (the only one without partitions). */
  readonly queue: Queue;
  /** The query queue of every partition (index = partition). */
  readonly queues: readonly Queue[];
  readonly outbound: OutboundQueueChannel;
  readonly logs: LogCapture;
  /** The app as the composition root builds it (on a registry of the harness's own). */
  readonly app: App;
  /** What the workers started by {@link startWorker} count (a registry of the harness's own). */
  readonly registry: Registry;
  readonly metrics: PipelineMetrics;
  /** The CROSSWALK_KEY shared with worker processes started by the test. */
  readonly secret: string;

  /** The OUTBOUND_KEY of {@link config} (worker processes get it too). */
  get outboundKey(): string {
    const key = this.config.delivery.outbound_queue.key;
    if (key === undefined) throw new Error('the harness config has no OUTBOUND_KEY');
    return key;
  }

  private constructor(parts: {
    app: App;
    secret: string;
    config: Config;
    simulator: RunningSimulator;
    redis: RedisClient;
    prefix: string;
    partitions: Partitions;
    endpoint: RedisEndpoint;
    crosswalk: Crosswalk;
    records: RecordStore;
    state: QueryState;
    scheduler: QueryScheduler;
    committer: UpdateCommitter;
    queues: Queue[];
    outbound: OutboundQueueChannel;
    logs: LogCapture;
  }) {
    this.app = parts.app;
    this.registry = parts.app.metrics;
    this.metrics = parts.app.pipelineMetrics;
    this.config = parts.config;
    this.simulator = parts.simulator;
    this.redis = parts.redis;
    this.prefix = parts.prefix;
    this.partitions = parts.partitions;
    this.endpoint = parts.endpoint;
    this.crosswalk = parts.crosswalk;
    this.records = parts.records;
    this.state = parts.state;
    this.scheduler = parts.scheduler;
    this.committer = parts.committer;
    this.queues = parts.queues;
    this.queue = parts.queues[0] as Queue;
    this.outbound = parts.outbound;
    this.logs = parts.logs;
    this.secret = parts.secret;
  }

  /** The environment a `concordance-worker work` process needs to join this pipeline. */
  processEnv(): Record<string, string> {
    const { url, cluster_nodes: nodes } = this.endpoint;
    return {
      REDIS_URL: url,
      ...(nodes === undefined || nodes.length === 0
        ? {}
        : { REDIS_CLUSTER_NODES: nodes.join(',') }),
      REDIS_PARTITIONS: String(this.partitions.count),
      REDIS_PREFIX: this.prefix,
      SERVICE_BASE_URL: this.simulator.url,
      SERVICE_API_KEY: API_KEY,
      CROSSWALK_KEY: this.secret,
      OUTBOUND_KEY: this.outboundKey,
      METRICS_PORT: '0',
      LOG_LEVEL: 'debug',
    };
  }

  static async start(
    options: {
      config?: Config;
      faults?: FaultProfile;
      latencyMs?: [number, number];
      /** `redis.partitions`. @defaultValue the run's (`TEST_REDIS_PARTITIONS`, else 1) */
      partitions?: number;
      /** Another Redis (a cluster of the test's own). @defaultValue the run's */
      endpoint?: RedisEndpoint;
      /**
       * Join the data another harness wrote (its prefix and CROSSWALK_KEY), e.g. with other
       * partitions; this harness then leaves the keys to their owner when it closes.
       */
      join?: { prefix: string; secret: string };
    } = {},
  ): Promise<PipelineHarness> {
    const base = options.config ?? testConfig();
    const [minMs, maxMs] = options.latencyMs ?? [100, 300];
    const simulator = await startSimulator({
      port: 0,
      apiKeys: [API_KEY],
      latency: { minMs, maxMs },
      faults: options.faults,
      relationshipCount: 50,
    });
    const endpoint = options.endpoint ?? testRedisEndpoint();
    const isolated =
      options.join === undefined
        ? await isolatedRedis(endpoint)
        : (() => {
            const redis = testRedisClient(endpoint);
            return { prefix: options.join.prefix, redis, cleanup: () => redis.quit() };
          })();
    const secret = options.join?.secret ?? generateCrosswalkSecret();
    const keys = deriveCrosswalkKeys(secret);
    const { redis, prefix } = isolated;
    const config: Config = {
      ...base,
      redis: {
        ...base.redis,
        prefix,
        url: endpoint.url,
        cluster_nodes: [...(endpoint.cluster_nodes ?? [])],
        partitions: options.partitions ?? testPartitions(),
      },
    };
    const logs = captureLogs();
    const app = App.compose(config, logs.logger, { redis, keys, registry: new Registry() });
    const queues = app.queriesQueues(redis);
    const outbound = app.outboundChannel(redis);
    const harness = new PipelineHarness({
      app,
      config,
      simulator,
      redis,
      prefix,
      partitions: app.partitions,
      endpoint,
      crosswalk: app.crosswalk,
      records: app.records,
      state: app.state,
      scheduler: app.queryScheduler(),
      // The ingest counters on a registry apart, as in an ingest process of its own.
      committer: app.committer(new Registry()),
      queues,
      outbound,
      logs,
      secret,
    });
    harness.#closers.push(
      () => simulator.close(),
      () => Promise.all(queues.map((queue) => queue.close())),
      () => outbound.close(),
      () => isolated.cleanup(),
    );
    return harness;
  }

  /** Starts a worker (a fresh connection, as a separate worker process would have). */
  async startWorker(
    apiKey = API_KEY,
    baseUrl = this.simulator.url,
    /** Where results go. @defaultValue the outbound queue alone */
    sink: ResultSink = this.outbound,
  ): Promise<{ close(): Promise<void> }> {
    const connection = workerConnection(this.endpoint, 'test-worker');
    const client = this.app.serviceClient({ baseUrl, apiKey });
    // The queries of every partition, as `concordance-worker work` runs them. An outcome is
    // reported once it is written.
    const outcomeIn =
      (partition: number) =>
      ({ data, decision, eventId }: SubmitOutcome | PolledOutcome) =>
        this.#record({
          result: { outcome: decision.kind === 'end' ? decision.outcome : 'superseded', eventId },
          data,
          partition,
        });
    const started: ConcordanceQueries[] = [];
    for (const partition of this.partitions.prefixes.keys()) {
      const outcome = outcomeIn(partition);
      started.push(
        await this.app.queryEngine({
          connection,
          partition,
          client,
          sink,
          onSubmitOutcome: outcome,
          onPolledOutcome: outcome,
        }),
      );
    }
    const close = async () => {
      await Promise.all(
        started.map(async (entry) => {
          await entry.stop();
          await entry.worker.close();
        }),
      );
      for (const { queue } of started) await queue.close();
      connection.disconnect();
    };
    this.#closers.unshift(close);
    return { close };
  }

  /**
   * The concordance queries of one partition as another worker process would have them, not
   * running: a test takes their jobs itself (`worker.getNextJob`). Closed with the harness.
   */
  async idleQueries(partition = 0): Promise<ConcordanceQueries> {
    const connection = workerConnection(this.endpoint, 'test-idle-worker');
    const queries = await this.app.queryEngine({
      connection,
      partition,
      client: this.app.serviceClient({ baseUrl: this.simulator.url, apiKey: API_KEY }),
      sink: this.outbound,
      autorun: false,
    });
    this.#closers.unshift(async () => {
      await queries.stop();
      await queries.worker.close(true);
      await queries.queue.close();
      connection.disconnect();
    });
    return queries;
  }

  #record(ended: { result: QueryJobResult; data: QueryRecord; partition: number }): void {
    this.outcomes.push(ended);
    for (const waiter of this.#waiters.splice(0)) {
      if (this.outcomes.length >= waiter.count) waiter.resolve();
      else this.#waiters.push(waiter);
    }
  }

  /** Stores a record and opens its queries in one script, as ingest does. */
  async update(
    localId: string,
    categories: string[],
    record: AssembledPatient,
    eventId: string,
  ): Promise<{ patientServiceId: string; version: number; jobs: string[] }> {
    const { patientServiceId } = await this.crosswalk.resolve(localId);
    const result = await this.committer.commit({
      patientServiceId,
      record: {
        kind: 'put',
        sealed: this.records.sealRecord(patientServiceId, record),
        contentHmac: this.records.contentHmac(patientServiceId, record),
      },
      eventId,
      now: new Date(),
      extraCategories: categories,
    });
    if (result.status !== 'ok') throw new Error(`the update was not stored: ${result.status}`);
    return {
      patientServiceId,
      version: result.version,
      jobs: result.queries.map((q) => q.job_id),
    };
  }

  /** Resolves once `count` queries have ended (in any outcome). */
  untilOutcomes(count: number): Promise<void> {
    if (this.outcomes.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ count, resolve }));
  }

  async requests(): Promise<RequestLogEntry[]> {
    const response = await fetch(`${this.simulator.url}/_admin/requests`, {
      headers: { 'x-admin-key': API_KEY },
    });
    return (await response.json()) as RequestLogEntry[];
  }

  async submissions(): Promise<RequestLogEntry[]> {
    return (await this.requests()).filter(
      (r) => r.method === 'POST' && r.path === '/v1/concordance',
    );
  }

  async setFaults(faults: FaultProfile): Promise<void> {
    const response = await fetch(`${this.simulator.url}/_admin/faults`, {
      method: 'POST',
      headers: { 'x-admin-key': API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify(faults),
    });
    if (!response.ok)
      throw new Error(`faults refused: ${response.status} ${await response.text()}`);
  }

  /** The query queue of a patient's partition. */
  queueOf(patientServiceId: string): Queue {
    return this.queues[this.partitions.indexOf(patientServiceId)] as Queue;
  }

  /** Opened queries not yet added to a queue, over every partition's outbox. */
  async outboxSize(): Promise<number> {
    const sizes = await Promise.all(
      this.partitions.prefixes.map((prefix) => this.redis.zcard(queryOutboxKey(prefix))),
    );
    return sizes.reduce((a, b) => a + b, 0);
  }

  /** The jobs every partition's query queue holds, in any state. */
  async queryJobs(): Promise<number> {
    const counts = await Promise.all(this.queues.map((queue) => queue.getJobCounts()));
    return counts.flatMap((c) => Object.values(c)).reduce((a, b) => a + b, 0);
  }

  /** Queries waiting for a poll (or being polled), over every partition's due set of polls. */
  async polling(): Promise<number> {
    const sizes = await Promise.all(
      this.partitions.prefixes.map((prefix) => this.redis.zcard(pollSetKey(prefix))),
    );
    return sizes.reduce((a, b) => a + b, 0);
  }

  /** The jobs of every partition's query queue in `states`. */
  async jobs(states: JobType[]): Promise<Job[]> {
    return (await Promise.all(this.queues.map((queue) => queue.getJobs(states)))).flat();
  }

  /** The events in the outbound queue, opened with the outbound key, oldest first. */
  async delivered(): Promise<ResultEvent[]> {
    const events = await openedEvents(this.outbound.queue, this.outboundKey);
    return events.sort((a, b) => a.created_at.localeCompare(b.created_at));
  }

  async close(): Promise<void> {
    for (const close of this.#closers.splice(0)) await close();
  }
}
