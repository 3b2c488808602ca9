import { randomBytes } from 'node:crypto';
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
