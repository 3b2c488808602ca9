import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { App } from '../../../../src/app/compose-app.ts';
import type { Config } from '../../../../src/config/config-schema.ts';
import { loadConfig } from '../../../../src/config/load-config.ts';
import type { DeliveryRouting } from '../../../../src/delivery/create-delivery-router.ts';
import type { ResultEvent } from '../../../../src/interface/result-event.ts';
import { WEBHOOK_DELIVERIES } from '../../../../src/delivery/webhook-deliveries-queue.ts';
import { generateCrosswalkSecret } from '../../../../src/identity/crosswalk-keys.ts';
import { QUEUE_VIEW_PATH } from '../../../../src/ingest/queue-view/queue-view-routes.ts';
import { CONCORDANCE_QUERIES } from '../../../../src/queues/queue-names.ts';
import { workerConnection } from '../../../../src/queues/redis-connections.ts';
import { runIngest } from '../../../../src/runtime/run-ingest.ts';
import { startWebhookReceiver } from '../../../../tools/webhook-receiver.ts';
import { makeEvent, newSecret } from '../../delivery/delivery-fixture.ts';
import { captureLogs } from '../../../support/log-capture.ts';
import { newOutboundKey } from '../../../support/outbound.ts';
import { isolatedRedis, testRedisEndpoint, testRedisEnv } from '../../../support/redis.ts';

/** A hospital's local patient id planted in every event: the view must never show it. */
export const PLANTED_PATIENT_ID = 'MRN-PLANTED-QUEUE-VIEW-7731';

/** The view's own token, an ingest token, and the answer the webhook receiver gives. */
export const VIEW_TOKEN = randomBytes(24).toString('base64url');
export const INGEST_TOKEN = randomBytes(24).toString('base64url');
const RECEIVER_STATUS = 503;

/** A queue as the board names it: its Redis key root. */
export const boardName = (prefix: string, queue: string): string => `${prefix}:${queue}`;

/**
 * The ingest process as `concordance-worker ingest` runs it (src/runtime/run-ingest.ts), with the
 * queue view on, on a free port and real Redis under the test's own prefix; beside it the delivery
 * side as `work` builds it (the router, and a webhook worker of partition 0 only) and a real
 * webhook receiver that answers 503 to everything, so that a delivery retries until its
 * `max_age_ms` and is dead-lettered.
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
      INGEST_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
    },
  });
  const config: Config = {
    ...loaded,
    hl7v2: { ...loaded.hl7v2, mllp: { ...loaded.hl7v2.mllp, enabled: false } },
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
  const ingest = await runIngest(config, logs.logger, { registry: new Registry() });
  closers.unshift(() => ingest.close());
  await ingest.ready;

  // The delivery side, as `work` builds it, on a connection of its own.
  const connection = workerConnection(testRedisEndpoint(), 'test-queue-view-work');
  const app = App.compose(config, logs.logger, { redis: connection, registry: new Registry() });
  const routing = app.deliveryRouter(connection);
  const { worker, queue } = await app.webhookDeliveries(connection, 0);
  closers.unshift(async () => {
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
      ...prefixes.map((p) => boardName(p, 'dead-letters')),
    ],
    event,
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
