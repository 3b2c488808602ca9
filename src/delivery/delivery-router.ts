import type { Logger } from 'pino';
import type { FeedMetrics } from '../observability/feed-metrics.ts';
import type { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import type { ChangeDetector } from './change-detector.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import type { ResultKeeper } from './result-keeper.ts';
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
  /**
   * `cw_feed_messages_total`: a result handed to a channel that does not report its own outcomes
   * (the outbound queue) counts `delivered` by the feed of its query, once per such channel.
   */
  feeds?: FeedMetrics;
  /**
   * Gets every checked event (suppressed ones too), with the channels: the CDS Hooks service's
   * kept results. @defaultValue none
   */
  keeper?: ResultKeeper | undefined;
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
  readonly #feeds: FeedMetrics | undefined;
  readonly #now: () => number;
  readonly #keeper: ResultKeeper | undefined;

  constructor(options: DeliveryRouterOptions) {
    this.channels = options.channels;
    this.#changes = options.changes;
    this.#onlyChanged = options.onlyChanged ?? false;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#feeds = options.feeds;
    this.#now = options.now ?? Date.now;
    this.#keeper = options.keeper;
  }

  async deliver(event: ResultEvent): Promise<void> {
    await this.deliverMany([event]);
  }

  /**
   * Routes several events at once: each channel gets the ones not suppressed in one hand-over
   * (one bulk add for the outbound queue).
   */
  async deliverMany(events: readonly ResultEvent[]): Promise<void> {
    const answers = await this.#changes.checkWithFeeds(events);
    const checked = events.map((event, i) => ({ event, ...answers[i] }));
    const routed: ResultEvent[] = [];
    const feeds: (string | undefined)[] = [];
    for (const { event, changed = false, feed } of checked) {
      if (this.#onlyChanged && !changed) {
        for (const channel of this.channels) {
          this.#metrics?.deliveries.inc({ channel: channel.name, outcome: 'suppressed' });
        }
        this.#logger.info(
          { event_id: event.id, query_key: queryKeyOf(event), changed, outcome: 'suppressed' },
          'result unchanged: not delivered',
        );
      } else {
        routed.push({ ...event, changed });
        feeds.push(feed);
      }
    }
    // Every checked event, suppressed or not: the keeper keeps the latest whatever the channels do.
    const kept = this.#keeper?.keep(events);
    if (routed.length === 0) {
      await kept;
      return;
    }
    await Promise.all([
      kept,
      ...this.channels.map((channel) =>
        channel.deliverMany !== undefined
          ? channel.deliverMany(routed)
          : Promise.all(routed.map((event) => channel.deliver(event))),
      ),
    ]);
    const now = this.#now();
    for (const channel of this.channels) {
      if (channel.reportsOutcomes === true) continue;
      this.#metrics?.deliveries.inc({ channel: channel.name, outcome: 'delivered' }, routed.length);
      for (const feed of feeds) if (feed !== undefined) this.#feeds?.count(feed, 'delivered');
      for (const event of routed) {
        const seconds = updateToDeliverySeconds(event, now);
        if (seconds !== undefined)
          this.#metrics?.updateToDelivery.observe({ channel: channel.name }, seconds);
      }
    }
    if (this.#logger.isLevelEnabled('debug')) {
      for (const event of routed) {
        this.#logger.debug(
          {
            event_id: event.id,
            query_key: queryKeyOf(event),
            changed: event.changed,
            channels: this.channels.map((c) => c.name),
          },
          'result handed to the delivery channels',
        );
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.channels.map((channel) => channel.close()));
  }
}
