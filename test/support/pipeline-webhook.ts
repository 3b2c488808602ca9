import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { App } from '../../src/app/compose-app.ts';
import type { Config } from '../../src/config/config-schema.ts';
import type { ResultSink } from '../../src/delivery/result-sink.ts';
import { deriveCrosswalkKeys } from '../../src/identity/crosswalk-keys.ts';
import { workerConnection } from '../../src/queues/redis-connections.ts';
import {
  startWebhookReceiver,
  type ReceivedAttempt,
  type WebhookReceiver,
} from '../../tools/webhook-receiver.ts';
import { PipelineHarness } from './pipeline-harness.ts';

/** A {@link PipelineHarness}'s pipeline with the webhook on, started by {@link startPipelineWithWebhook}. */
export interface PipelineWithWebhook {
  harness: PipelineHarness;
  /** The `whsec_…` secret the deliveries are signed with (made for the test). */
  secret: string;
  /** The real receiver, checking every signature. */
  receiver: WebhookReceiver;
  /** The delivery router (the webhook and the harness's outbound queue): the query workers' sink. */
  router: ResultSink;
  /** Closes the webhook side, then the harness. */
  close(): Promise<void>;
}

/**
 * `delivery.webhook` of `config` pointed at `url` with `secret`, with quick retries (50 ms first,
 * capped at 200 ms), no probe and a 10 minute give-up age.
 */
export function quickWebhook(
  config: Config,
  url: string,
  secret: string,
): Config['delivery']['webhook'] {
  return {
    ...config.delivery.webhook,
    url,
    secret: [secret],
    backoff: { first_delay_ms: 50, max_delay_ms: 200, jitter: 0.2 },
    max_age_ms: 600_000,
    probe_interval_ms: 0,
  };
}

/**
 * A {@link PipelineHarness} (started with `harness`) and the delivery side as `work` builds it
 * through the composition root, on the harness's prefix and keys: a signature-checking webhook
 * receiver, the delivery router with the webhook on (and the harness's outbound queue), and one
 * webhook worker per partition on a connection of their own. Quick retries (50 ms first, capped
 * at 200 ms), no probe, a 10 minute give-up age, unless `webhook` says otherwise.
 * Start the query workers with `harness.startWorker(undefined, undefined, router)`.
 */
export async function startPipelineWithWebhook(
  options: {
    harness?: Parameters<typeof PipelineHarness.start>[0];
    respond?: (attempt: Omit<ReceivedAttempt, 'status'>) => number;
    webhook?: Partial<Config['delivery']['webhook']>;
  } = {},
): Promise<PipelineWithWebhook> {
  const harness = await PipelineHarness.start(options.harness);
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const receiver = await startWebhookReceiver({ secret, respond: options.respond });
  const { config } = harness;
  const app = App.compose(
    {
      ...config,
      delivery: {
        ...config.delivery,
        webhook: { ...quickWebhook(config, receiver.url, secret), ...options.webhook },
      },
    },
    harness.logs.logger,
    { redis: harness.redis, keys: deriveCrosswalkKeys(harness.secret), registry: new Registry() },
  );
  const routing = app.deliveryRouter(harness.redis);
  const connection = workerConnection(harness.endpoint, 'test-pipeline-webhook');
  const closers: (() => Promise<unknown>)[] = [
    async () => connection.disconnect(),
    () => routing.close(),
    () => receiver.close(),
    () => harness.close(),
  ];
  for (const partition of harness.partitions.prefixes.keys()) {
    const { worker, queue } = await app.webhookDeliveries(connection, partition);
    closers.unshift(async () => {
      await worker.close();
      await queue.close();
    });
  }
  return {
    harness,
    secret,
    receiver,
    router: routing.router,
    async close() {
      for (const close of closers.splice(0)) await close();
    },
  };
}

/** What {@link startIngestWithWebhook} started. */
export interface IngestWithWebhook {
  h: PipelineHarness;
  r: WebhookReceiver;
  ingest: FastifyInstance;
  /** The ingest app's address. */
  url: string;
}

/**
 * The pipeline as `start` runs it, built by the harness's composition root: a signature-checking
 * webhook receiver (answering with `respond`), a {@link PipelineHarness} on `config(receiver,
 * secret)`, the delivery router, one webhook worker per partition on a connection named
 * `connectionName`, the query workers delivering through the router, and the ingest app listening
 * on a free port. Each piece's close goes into `closers` (run them in order to stop it all).
 */
export async function startIngestWithWebhook(options: {
  config: (receiver: WebhookReceiver, secret: string) => Config;
  connectionName: string;
  closers: (() => Promise<unknown>)[];
  respond?: (attempt: Omit<ReceivedAttempt, 'status'>) => number;
}): Promise<IngestWithWebhook> {
  const { closers } = options;
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const r = await startWebhookReceiver({ secret, respond: options.respond });
  closers.push(() => r.close());
  const h = await PipelineHarness.start({ config: options.config(r, secret) });
  closers.unshift(() => h.close());
  const routing = h.app.deliveryRouter(h.redis);
  closers.unshift(() => routing.close());
  const connection = workerConnection(h.endpoint, options.connectionName);
  closers.push(async () => connection.disconnect());
  for (const p of h.partitions.prefixes.keys()) {
    const webhook = await h.app.webhookDeliveries(connection, p);
    closers.unshift(async () => {
      await webhook.worker.close();
      await webhook.queue.close();
    });
  }
  await h.startWorker(undefined, undefined, routing.router);
  const ingest = await h.app.ingestApp(h.app.ingestParts());
  closers.unshift(() => ingest.close());
  const url = await ingest.listen({ port: 0, host: '127.0.0.1' });
  return { h, r, ingest, url };
}
