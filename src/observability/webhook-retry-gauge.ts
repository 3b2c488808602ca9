import { Gauge, type Registry } from 'prom-client';
import { QUEUE_COUNT_TIMEOUT_MS, within } from './pipeline-metrics.ts';

export const WEBHOOK_OLDEST_RETRY = 'cw_webhook_oldest_retry_seconds';

/** A partition's retrying webhook deliveries, as the gauge reads them. */
export interface WatchedRetries {
  partition: number;
  /**
   * When the oldest pending delivery with a failed attempt made its first attempt (epoch ms), or
   * undefined when none (`WebhookDeliveryStore.oldestRetryAt`).
   */
  oldestRetryAt(): Promise<number | undefined>;
}

export interface WebhookRetryGaugeOptions {
  /** @defaultValue `Date.now` */
  now?: () => number;
  /** How long a scrape waits for one partition. @defaultValue {@link QUEUE_COUNT_TIMEOUT_MS} */
  timeoutMs?: number;
}

/** The watched partitions of each registry (two roles of one process share the gauge). */
const watchedBy = new WeakMap<Registry, Set<WatchedRetries>>();

/**
 * `cw_webhook_oldest_retry_seconds{partition}`: how long the oldest webhook delivery that failed
 * and still waits to be delivered has been trying (now minus its first attempt; 0 when none), read
 * from Redis on every scrape. The source is a sorted set the delivery store keeps in step with each
 * delivery's state in the same scripts (see `WebhookDeliveryStore.oldestRetryAt`): BullMQ's delayed
 * jobs cannot tell a delivery waiting out its backoff from one parked behind its key's line, and a
 * retry promoted early (probe, resume) is not delayed at all, so reading them would mean reading
 * every delayed job's state. The cost is one `ZRANGE … 0 0 WITHSCORES` per partition and scrape,
 * O(log n) however many deliveries wait. A partition that does not answer within `timeoutMs` is left
 * out (no stale value). The first call for a registry makes the gauge (and sets its options); every
 * call returns a function that takes its partitions out again.
 */
export function watchWebhookRetries(
  registry: Registry,
  partitions: readonly WatchedRetries[],
  options: WebhookRetryGaugeOptions = {},
): () => void {
  const entries = watchedBy.get(registry) ?? register(registry, options);
  for (const entry of partitions) entries.add(entry);
  return () => {
    for (const entry of partitions) entries.delete(entry);
  };
}

/** Makes the gauge on `registry`; returns the set of partitions it reads. */
function register(
  registry: Registry,
  { now = Date.now, timeoutMs = QUEUE_COUNT_TIMEOUT_MS }: WebhookRetryGaugeOptions,
): Set<WatchedRetries> {
  const entries = new Set<WatchedRetries>();
  watchedBy.set(registry, entries);
  /** Age in seconds of a partition's oldest retry; null when Redis did not answer in time. */
  const ageOf = async ({ oldestRetryAt }: WatchedRetries, at: number): Promise<number | null> => {
    try {
      const first = await within(oldestRetryAt(), timeoutMs, 'oldest webhook retry');
      // A worker's clock a little ahead of this one's reads as 0, never negative.
      return first === undefined ? 0 : Math.max(0, at - first) / 1_000;
    } catch {
      return null;
    }
  };
  new Gauge({
    name: WEBHOOK_OLDEST_RETRY,
    help: 'Seconds since the first attempt of the oldest webhook delivery that failed and is still pending (waiting out its backoff or being retried), by partition; 0 when none; read from Redis on every scrape.',
    labelNames: ['partition'],
    registers: [registry],
    async collect() {
      const at = now();
      const read = await Promise.all(
        [...entries].map(async (entry) => ({
          partition: String(entry.partition),
          seconds: await ageOf(entry, at),
        })),
      );
      // Replaced in one synchronous step, so that two scrapes at once never mix.
      this.reset();
      for (const { partition, seconds } of read)
        if (seconds !== null) this.set({ partition }, seconds);
    },
  });
  return entries;
}
