import type { Queue } from 'bullmq';
import { Counter, Gauge, type Registry } from 'prom-client';

/** What the consumer-lag gauges read from the outbound queue. */
export type LagQueue = Pick<Queue, 'name' | 'getWaitingCount' | 'getJobs'>;

/** How the outbound queue's consumer keeps up, read from Redis on every scrape. */
export interface OutboundLag {
  /** Events waiting for the consumer. */
  waiting: number;
  /** Age of the oldest waiting event (0 when none waits). */
  oldestWaitingSeconds: number;
}

/** Reads {@link OutboundLag} from the queue. */
export async function outboundLag(queue: LagQueue, now = Date.now()): Promise<OutboundLag> {
  const waiting = await queue.getWaitingCount();
  if (waiting === 0) return { waiting, oldestWaitingSeconds: 0 };
  // The wait list in ascending order: its first job is the oldest.
  const [oldest] = await queue.getJobs(['wait'], 0, 0, true);
  const seconds = oldest === undefined ? 0 : Math.max(0, (now - oldest.timestamp) / 1_000);
  return { waiting, oldestWaitingSeconds: seconds };
}

function reuse<M>(registry: Registry, name: string, make: () => M): M {
  return (registry.getSingleMetric(name) as M | undefined) ?? make();
}

/**
 * `cw_outbound_queue_waiting`, `cw_outbound_queue_oldest_waiting_seconds` (gauges read on
 * scrape: a consumer that stopped shows as a growing age) and `cw_outbound_queue_expired_total`
 * (events nobody consumed within `retention.waiting_age_s`, dropped).
 */
export class OutboundQueueMetrics {
  readonly expired: Counter<'queue'>;
  readonly #queues = new Set<LagQueue>();

  constructor(registry: Registry) {
    const registers = [registry];
    const queues = this.#queues;
    const read = async () =>
      Promise.all(
        [...queues].map(async (queue) => ({
          queue: queue.name,
          lag: await outboundLag(queue).catch(() => null),
        })),
      );
    this.expired = reuse(
      registry,
      'cw_outbound_queue_expired_total',
      () =>
        new Counter({
          name: 'cw_outbound_queue_expired_total',
          help: 'Outbound events nobody consumed within retention.waiting_age_s, dropped.',
          labelNames: ['queue'],
          registers,
        }),
    );
    reuse(
      registry,
      'cw_outbound_queue_waiting',
      () =>
        new Gauge({
          name: 'cw_outbound_queue_waiting',
          help: 'Result events waiting in the outbound queue for the hospital consumer.',
          labelNames: ['queue'],
          registers,
          async collect() {
            const lags = await read();
            this.reset();
            for (const { queue, lag } of lags) if (lag !== null) this.set({ queue }, lag.waiting);
          },
        }),
    );
    reuse(
      registry,
      'cw_outbound_queue_oldest_waiting_seconds',
      () =>
        new Gauge({
          name: 'cw_outbound_queue_oldest_waiting_seconds',
          help: 'Age of the oldest result event the consumer has not taken (0 when none waits).',
          labelNames: ['queue'],
          registers,
          async collect() {
            const lags = await read();
            this.reset();
            for (const { queue, lag } of lags)
              if (lag !== null) this.set({ queue }, lag.oldestWaitingSeconds);
          },
        }),
    );
  }

  /** Reads `queue` on each scrape; returns a function that stops it (call before closing it). */
  watch(queue: LagQueue): () => void {
    this.#queues.add(queue);
    return () => this.#queues.delete(queue);
  }
}
