import type { Logger } from 'pino';
import type { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import type { ChangeDetector } from './change-detector.ts';
import type { ResultEvent } from './result-event.ts';
import type { DeliveryChannel, ResultSink } from './result-sink.ts';
import { queryKeyOf } from './webhook-delivery-store.ts';
import { updateToDeliverySeconds } from './update-to-delivery.ts';

export interface DeliveryRouterOptions {
  /** Every enabled channel; each gets every event that is not suppressed. */
  channels: readonly DeliveryChannel[];
  changes: ChangeDetector;
  /** Drop results equal to the key's previous one (`delivery.only_changed`). @defaultValue false */
  onlyChanged?: boolean;
  logger: Logger;
  metrics?: PipelineMetrics;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * The sink the query worker hands results to: marks each event `changed` or not, drops unchanged
 * ones when `only_changed` asks for it, and hands the rest to every enabled channel. A channel
 * that throws fails the hand-over, so the query job retries it; every channel is idempotent per
 * event id, so the retry adds nothing where the first hand-over had succeeded.
 */
export class DeliveryRouter implements ResultSink {
  readonly channels: readonly DeliveryChannel[];
  readonly #changes: ChangeDetector;
  readonly #onlyChanged: boolean;
  readonly #logger: Logger;
  readonly #metrics: PipelineMetrics | undefined;
  readonly #now: () => number;

  constructor(options: DeliveryRouterOptions) {
    this.channels = options.channels;
    this.#changes = options.changes;
    this.#onlyChanged = options.onlyChanged ?? false;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#now = options.now ?? Date.now;
  }

  async deliver(event: ResultEvent): Promise<void> {
    const changed = await this.#changes.check(event);
    const log = { event_id: event.id, query_key: queryKeyOf(event), changed };
    if (this.#onlyChanged && !changed) {
      for (const channel of this.channels) {
        this.#metrics?.deliveries.inc({ channel: channel.name, outcome: 'suppressed' });
      }
      this.#logger.info({ ...log, outcome: 'suppressed' }, 'result unchanged: not delivered');
      return;
    }
    const routed: ResultEvent = { ...event, changed };
    await Promise.all(this.channels.map((channel) => channel.deliver(routed)));
    const now = this.#now();
    for (const channel of this.channels) {
      if (channel.reportsOutcomes === true) continue;
      this.#metrics?.deliveries.inc({ channel: channel.name, outcome: 'delivered' });
      const seconds = updateToDeliverySeconds(event, now);
      if (seconds !== undefined)
        this.#metrics?.updateToDelivery.observe({ channel: channel.name }, seconds);
    }
    this.#logger.debug(
      { ...log, channels: this.channels.map((c) => c.name) },
      'result handed to the delivery channels',
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.channels.map((channel) => channel.close()));
  }
}
