import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { App } from '../../../../src/app/compose-app.ts';
import type { Config } from '../../../../src/config/config-schema.ts';
import { loadConfig } from '../../../../src/config/load-config.ts';
import type { DeliveryRouting } from '../../../../src/delivery/create-delivery-router.ts';
import type { ResultEvent } from '../../../../src/interface/result-event.ts';
import { WEBHOOK_DELIVERIES } from '../../../../src/delivery/webhook-deliveries-queue.ts';
import { generateCrosswalkSecret } from '../../../../src/identity/crosswalk-keys.ts';
import { QUERY_POLLS } from '../../../../src/ingest/queue-view/polls-adapter.ts';
import { QUEUE_VIEW_PATH } from '../../../../src/ingest/queue-view/queue-view-routes.ts';
import { CONCORDANCE_QUERIES } from '../../../../src/queues/queue-names.ts';
import { workerConnection } from '../../../../src/queues/redis-connections.ts';
import { runIngest } from '../../../../src/runtime/run-ingest.ts';
import { startSimulator } from '../../../../src/simulator/start-simulator.ts';
import type { ConcordanceQueries } from '../../../../workers/concordance-queries.ts';
import { startWebhookReceiver } from '../../../../tools/webhook-receiver.ts';
import { makeEvent, newSecret } from '../../delivery/delivery-fixture.ts';
import { captureLogs } from '../../../support/log-capture.ts';
import { newOutboundKey } from '../../../support/outbound.ts';
import type { AssembledPatient } from '../../../../src/interface/assembled-patient.ts';
import { sampleRecord } from '../../../support/pipeline-harness.ts';
import { isolatedRedis, testRedisEndpoint, testRedisEnv } from '../../../support/redis.ts';

/** A hospital's local patient id planted in every event: the view must never show it. */
export const PLANTED_PATIENT_ID = 'MRN-PLANTED-QUEUE-VIEW-7731';

/** The view's own token, an ingest token, and the answer the webhook receiver gives. */
export const VIEW_TOKEN = randomBytes(24).toString('base64url');
export const INGEST_TOKEN = randomBytes(24).toString('base64url');
const RECEIVER_STATUS = 503;
const SERVICE_API_KEY = randomBytes(18).toString('base64url');

/** A queue as the board names it: its Redis key root. */
export const boardName = (prefix: string, queue: string): string => `${prefix}:${queue}`;

/** A query ingest opened for a record update (see {@link QueueViewStack.update}). */
export interface OpenedQuery {
  patientServiceId: string;
  ccsrCategory: string;
  /** Its job of the `concordance-queries` queue. */
  jobId: string;
}

/** A query the worker submitted: the service holds its remote job running, so it is polled. */
export interface PolledQuery extends OpenedQuery {
  remoteJobId: string;
  queryId: string;
}

/**
 * The ingest process as `concordance-worker ingest` runs it (src/runtime/run-ingest.ts), with the
 * queue view on, on a free port and real Redis under the test's own prefix; beside it the work
 * side as `work` builds it: the delivery router, a webhook worker of partition 0 only, and the
 * concordance queries of every partition (outbox relay, submission worker, poller) against the
 * local Clinical Graph Service, which keeps every job running (`never_finish_rate: 1`), so that a
 * submitted query stays in its partition's poll set. A real webhook receiver answers 503 to
 * everything, so that a delivery retries until its `max_age_ms` and is dead-lettered.
 */
export interface QueueViewStack {
  /** The ingest API's address. */
  url: string;
  config: Config;
  /** The delivery side's composition (same configuration and CROSSWALK_KEY as the ingest). */
  app: App;
  routing: DeliveryRouting;
  /** Every partition's key prefix. */
  prefixes: readonly string[];
  /** The board's names of every queue the deployment has, and of each partition's dead letters. */
  expectedQueues(): string[];
  /** A result event of a patient of `partition`, naming the planted local patient id. */
  event(partition: number): ResultEvent;
  /**
   * A record update of the patient `localId` (a preset of `category` first) through the ingest
   * API at `ingestUrl` (the stack's own by default); resolves with the query it opened.
   */
  /** `record`: the update's record. @defaultValue a sample record */
  update(
    localId: string,
    category: string,
    ingestUrl?: string,
    record?: AssembledPatient,
  ): Promise<OpenedQuery>;
  /**
   * Resolves once the worker has submitted `query` and its job of `concordance-queries` has
   * completed; the query is then polled, and never finishes.
   */
  submitted(query: OpenedQuery): Promise<PolledQuery>;
  /**
   * Resolves once every query opened so far is a job of its partition's `concordance-queries`
   * queue: each partition's relay takes what its outbox holds now and the batches it has in
   * flight are written.
   */
  relayed(): Promise<void>;
  /**
   * Another ingest process on the same Redis and keys, its `queries` settings changed (e.g. a long
   * `debounce_ms`); closed with the stack. Resolves with its address.
   */
  ingestWith(queries: Partial<Config['queries']>): Promise<string>;
  /**
   * Puts an event of partition 0 through the router and resolves once the webhook worker has
   * dead-lettered it (the receiver answers 503 until its `max_age_ms` is past).
   */
  deadLetter(): Promise<ResultEvent>;
  /** The view's URL of `path` (under /admin/queues). */
  at(path?: string): string;
  close(): Promise<void>;
}

export async function startQueueViewStack(
  options: { partitions?: number } = {},
): Promise<QueueViewStack> {
  const closers: (() => Promise<unknown>)[] = [];
  const secret = newSecret();
  const receiver = await startWebhookReceiver({ secret, respond: () => RECEIVER_STATUS });
  closers.unshift(() => receiver.close());
  const isolated = await isolatedRedis();
  closers.unshift(() => isolated.cleanup());
  // The local service: every job it accepts stays running, so its query is polled until closed.
  const simulator = await startSimulator({
    port: 0,
    apiKeys: [SERVICE_API_KEY],
    latency: { minMs: 0, maxMs: 0 },
    faults: { never_finish_rate: 1 },
    relationshipCount: 10,
  });
  closers.unshift(() => simulator.close());
  const loaded = loadConfig({
    env: {
      ...testRedisEnv(),
      REDIS_PARTITIONS: String(options.partitions ?? 1),
      REDIS_PREFIX: isolated.prefix,
      INGEST_TOKENS: INGEST_TOKEN,
      QUEUE_VIEW_ENABLED: 'true',
      QUEUE_VIEW_TOKENS: VIEW_TOKEN,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      OUTBOUND_KEY: newOutboundKey(),
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
      SERVICE_BASE_URL: simulator.url,
      SERVICE_API_KEY,
      INGEST_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
    },
  });
  const config: Config = {
    ...loaded,
    hl7v2: { ...loaded.hl7v2, mllp: { ...loaded.hl7v2.mllp, enabled: false } },
    queries: {
      ...loaded.queries,
      debounce_ms: 50,
      poll: { ...loaded.queries.poll, first_delay_ms: 100, max_delay_ms: 400 },
    },
    delivery: {
      ...loaded.delivery,
      only_changed: false,
      outbound_queue: { ...loaded.delivery.outbound_queue, enabled: true },
      webhook: {
        ...loaded.delivery.webhook,
        backoff: { first_delay_ms: 50, max_delay_ms: 200, jitter: 0.2 },
        // A few attempts, then the delivery is given up and dead-lettered.
        max_age_ms: 600,
        probe_interval_ms: 0,
      },
    },
  };
  const logs = captureLogs();
  const startIngest = async (at: Config) => {
    const running = await runIngest(at, logs.logger, { registry: new Registry() });
    closers.unshift(() => running.close());
    await running.ready;
    return running;
  };
  const ingest = await startIngest(config);

  // The delivery side, as `work` builds it, on a connection of its own.
  const connection = workerConnection(testRedisEndpoint(), 'test-queue-view-work');
  const app = App.compose(config, logs.logger, { redis: connection, registry: new Registry() });
  const routing = app.deliveryRouter(connection);
  const { worker, queue } = await app.webhookDeliveries(connection, 0);
  const client = app.serviceClient({ baseUrl: simulator.url, apiKey: SERVICE_API_KEY });
  const queries: ConcordanceQueries[] = [];
  // The submission jobs completed so far, and who waits for one (the worker's own event).
  const completed = new Set<string>();
  const completions: { jobId: string; resolve: () => void }[] = [];
  for (const partition of app.partitions.prefixes.keys()) {
    const engine = await app.queryEngine({ connection, partition, client, sink: routing.router });
    engine.worker.on('completed', (job) => {
      completed.add(String(job.id));
      for (const waiter of completions.splice(0)) {
        if (waiter.jobId === job.id) waiter.resolve();
        else completions.push(waiter);
      }
    });
    queries.push(engine);
  }
  const jobCompleted = (jobId: string) =>
    completed.has(jobId)
      ? Promise.resolve()
      : new Promise<void>((resolve) => completions.push({ jobId, resolve }));
  closers.unshift(async () => {
    await Promise.all(
      queries.map(async (q) => {
        await q.stop();
        await q.worker.close(true);
      }),
    );
    for (const q of queries) await q.queue.close();
    await worker.close();
    await queue.close();
    await routing.close();
    connection.disconnect();
  });

  const prefixes = app.partitions.prefixes;
  const event = (partition: number) =>
    makeEvent({
      patient_id: PLANTED_PATIENT_ID,
      patient_service_id: app.partitions.drawPatientId(partition),
    });
  return {
    url: ingest.url,
    config,
    app,
    routing,
    prefixes,
    expectedQueues: () => [
      ...prefixes.map((p) => boardName(p, CONCORDANCE_QUERIES)),
      boardName(prefixes[0] as string, config.delivery.outbound_queue.name),
      ...prefixes.map((p) => boardName(p, WEBHOOK_DELIVERIES)),
      ...prefixes.map((p) => boardName(p, QUERY_POLLS)),
      ...prefixes.map((p) => boardName(p, 'dead-letters')),
    ],
    event,
    async update(localId, category, ingestUrl = ingest.url, record = sampleRecord('queue-view')) {
      const send = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(`${ingestUrl}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${INGEST_TOKEN}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        if (!response.ok) throw new Error(`${method} ${path}: ${response.status}`);
        return response;
      };
      await send('PUT', `/v1/patients/${encodeURIComponent(localId)}/presets/${category}`);
      const answer = (await (
        await send('POST', '/v1/record-updates', {
          patient_id: localId,
          event_id: `evt-${randomBytes(6).toString('hex')}`,
          source: 'ehr-queue-view',
          assembled_patient: record,
          changes: ['Condition'],
        })
      ).json()) as {
        patient_service_id: string;
        queries: { ccsr_category: string; job_id: string }[];
      };
      const opened = answer.queries.find((q) => q.ccsr_category === category);
      if (opened === undefined) throw new Error(`no ${category} query was opened`);
      return {
        patientServiceId: answer.patient_service_id,
        ccsrCategory: category,
        jobId: opened.job_id,
      };
    },
    async submitted(query) {
      const [line] = await Promise.all([
        logs.waitFor(
          (e) =>
            e.msg === 'query submitted' &&
            e.query_key === `${query.patientServiceId}/${query.ccsrCategory}`,
        ),
        // Its job of `concordance-queries` completed with the remote job id.
        jobCompleted(query.jobId),
      ]);
      return { ...query, remoteJobId: String(line.remote_job_id), queryId: String(line.query_id) };
    },
    async relayed() {
      for (const { relay } of queries) {
        await relay.tick();
        await relay.settled();
      }
    },
    async ingestWith(changes) {
      const other = await startIngest({ ...config, queries: { ...config.queries, ...changes } });
      return other.url;
    },
    async deadLetter() {
      const dead = event(0);
      await routing.router.deliver(dead);
      await logs.waitFor((e) => e.event_id === dead.id && e.outcome === 'dead_lettered');
      return dead;
    },
    at: (path = '') => `${ingest.url}${QUEUE_VIEW_PATH}${path}`,
    async close() {
      for (const close of closers.splice(0)) await close();
    },
  };
}
