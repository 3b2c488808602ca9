import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config/config-schema.ts';
import type { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import { ChangeDetector } from './change-detector.ts';
import { DeliveryConfigError } from './delivery-config-error.ts';
import { DeliveryRouter } from './delivery-router.ts';
import { OutboundQueueChannel } from './outbound-queue-channel.ts';
import type { DeliveryChannel } from './result-sink.ts';
import { WebhookChannel } from './webhook-channel.ts';

export interface CreateDeliveryRouterOptions {
  config: Config;
  /** Any connection; the channels' queues only add jobs. */
  connection: Redis;
  prefix: string;
  logger: Logger;
  metrics?: PipelineMetrics;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

export interface DeliveryRouting {
  /** Pass this as the query worker's `sink`. */
  router: DeliveryRouter;
  /** The enabled channels (`queue`, `webhook`), in that order. */
  channels: readonly DeliveryChannel[];
  /** Closes the channels' queues (not the connection). */
  close(): Promise<void>;
}

/**
 * Builds the channels `delivery.*` enables — the outbound queue when `outbound_queue.enabled`, the
 * webhook when `webhook.url` is set (both may be on) — and the router in front of them. Throws a
 * {@link DeliveryConfigError} when no channel is enabled or the webhook has no secret.
 */
export function createDeliveryRouter({
  config,
  connection,
  prefix,
  logger,
  metrics,
  now,
}: CreateDeliveryRouterOptions): DeliveryRouting {
  const { delivery } = config;
  if (delivery.webhook.url !== null && delivery.webhook.secret === undefined) {
    throw new DeliveryConfigError(
      'WEBHOOK_URL is set but WEBHOOK_SECRET is not: webhooks are always signed',
    );
  }
  const channels: DeliveryChannel[] = [];
  if (delivery.outbound_queue.enabled) {
    channels.push(
      new OutboundQueueChannel({
        connection,
        prefix,
        name: delivery.outbound_queue.name,
        retention: delivery.outbound_queue.retention,
      }),
    );
  }
  if (delivery.webhook.url !== null) channels.push(new WebhookChannel({ connection, prefix, now }));
  if (channels.length === 0) {
    throw new DeliveryConfigError(
      'no output channel is enabled: enable delivery.outbound_queue or set WEBHOOK_URL',
    );
  }
  const router = new DeliveryRouter({
    channels,
    changes: new ChangeDetector({
      redis: connection,
      prefix,
      ignoreFields: delivery.change_detection.ignore_fields,
    }),
    onlyChanged: delivery.only_changed,
    logger,
    metrics,
    now,
  });
  return { router, channels, close: () => router.close() };
}
