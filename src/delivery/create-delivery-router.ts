import type { Telemetry } from 'bullmq';
import { basePrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import type { Logger } from 'pino';
import type { DeliverySlice } from '../config/config-slices.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import type { FeedMetrics } from '../observability/feed-metrics.ts';
import type { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import { traceTtlSeconds } from '../trace/trace-keys.ts';
import { ChangeDetector } from './change-detector.ts';
import { DeliveryConfigError } from './delivery-config-error.ts';
import { deliveryConfigProblems } from './delivery-config-problems.ts';
import { DeliveryRouter } from './delivery-router.ts';
import { outboundKeyringOf } from './outbound-keyring.ts';
import { OutboundQueueChannel } from './outbound-queue-channel.ts';
import type { OutboundQueueMetrics } from './outbound-queue-metrics.ts';
import type { ResultKeeper } from './result-keeper.ts';
import type { DeliveryChannel } from './result-sink.ts';
import { WebhookChannel } from './webhook-channel.ts';

export interface CreateDeliveryRouterOptions {
  /** `delivery.*` and `outbound.*` (see configSlices). */
  config: DeliverySlice;
  /** Any connection; the channels' queues only add jobs. */
  connection: RedisClient;
  /**
   * A prefix, or the partitions: the webhook's queues and lines, and the change detector's last
   * results, are per partition; the outbound queue is one queue under the configured prefix.
   */
  prefix: KeySpace;
  /** The crosswalk keys: events waiting for the webhook rest sealed with them. */
  keys: CrosswalkKeys;
  logger: Logger;
  metrics?: PipelineMetrics;
  /** Counts outbound events dropped unconsumed (`cw_outbound_queue_expired_total`). */
  outboundMetrics?: OutboundQueueMetrics;
  /** `cw_feed_messages_total`: results the outbound queue took count `delivered` by feed. */
  feeds?: FeedMetrics;
  /** BullMQ's `telemetry` (bullmq-otel) for the channels' queues, when tracing is on. */
  telemetry?: Telemetry | undefined;
  /** Keeps the latest results for the CDS Hooks service (`cds_hooks.enabled`). @defaultValue none */
  keeper?: ResultKeeper | undefined;
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
 * The message trace's retention in seconds (`trace.retention_days`), 0 when `trace.enabled` is
 * off: the delivery steps then write no trace.
 */
export function deliveryTraceTtlOf(config: Pick<DeliverySlice, 'trace'>): number {
  return config.trace.enabled ? traceTtlSeconds(config.trace.retention_days) : 0;
}

/**
 * Builds the channels `delivery.*` enables — the outbound queue when `outbound_queue.enabled`, the
 * webhook when `webhook.url` is set (both may be on) — and the router in front of them. Throws a
 * {@link DeliveryConfigError} on the first of {@link deliveryConfigProblems} (no channel, a webhook
 * without secret, an outbound queue without `OUTBOUND_KEY`).
 */
export function createDeliveryRouter({
  config,
  connection,
  prefix,
  keys,
  logger,
  metrics,
  outboundMetrics,
  feeds,
  telemetry,
  keeper,
  now,
}: CreateDeliveryRouterOptions): DeliveryRouting {
  const { delivery } = config;
  const traceTtlS = deliveryTraceTtlOf(config);
  const [problem] = deliveryConfigProblems(config);
  if (problem !== undefined) throw new DeliveryConfigError(problem.message);
  const channels: DeliveryChannel[] = [];
  const outbound = delivery.outbound_queue;
  // `OUTBOUND_KEYS` (its first key seals) or `OUTBOUND_KEY` alone (key 0).
  const outboundKeys = outbound.enabled ? outboundKeyringOf(outbound) : undefined;
  if (outboundKeys !== undefined) {
    channels.push(
      new OutboundQueueChannel({
        connection,
        // One queue for the hospital's consumers, whatever the partitions (docs/deployment.md, "Scale out").
        prefix: basePrefix(prefix),
        name: outbound.name,
        retention: outbound.retention,
        key: outboundKeys,
        metrics: outboundMetrics,
        trace: { prefix, ttlS: traceTtlS },
        telemetry,
        now,
      }),
    );
  }
  if (delivery.webhook.url !== null) {
    channels.push(new WebhookChannel({ connection, prefix, keys, telemetry, now }));
  }
  const router = new DeliveryRouter({
    channels,
    changes: new ChangeDetector({
      redis: connection,
      prefix,
      ignoreFields: delivery.change_detection.ignore_fields,
      holdTraceTtlS: delivery.only_changed ? traceTtlS : 0,
      ...(now === undefined ? {} : { now }),
    }),
    onlyChanged: delivery.only_changed,
    logger,
    metrics,
    ...(feeds === undefined ? {} : { feeds }),
    keeper,
    now,
  });
  return { router, channels, close: () => router.close() };
}
