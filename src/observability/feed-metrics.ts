import type { Counter, Registry } from 'prom-client';
import { registryCounter } from './registry-counter.ts';

/**
 * The stages of a message's life, in the words of Mirth Connect's message browser (see
 * docs/message-trace.md): `received` every message read off the wire; `filtered` answered but with no
 * usable content or of a type not used; `queued` a query opened or joined; `sent` a query submitted
 * to the service; `errored` a message refused (AE, AR, HTTP 4xx or 5xx); `delivered` a result handed
 * to a channel (the webhook answered 2xx, the outbound queue took it). `queued`, `sent` and
 * `delivered` count queries and results, labelled with the feed of the message that opened the query.
 */
export const FEED_STAGES = [
  'received',
  'filtered',
  'queued',
  'sent',
  'errored',
  'delivered',
] as const;
export type FeedStage = (typeof FEED_STAGES)[number];

/** `cw_feed_messages_total{feed,stage}`; the feeds are `Feed` of src/trace/trace-keys.ts. */
export class FeedMetrics {
  readonly #counter: Counter<'feed' | 'stage'>;

  constructor(registry: Registry) {
    this.#counter = registryCounter(
      registry,
      'cw_feed_messages_total',
      'Messages and their queries per feed (hl7v2-mllp, hl7v2-http, fhir, json) and stage: received, filtered, queued, sent, errored, delivered.',
      ['feed', 'stage'],
    );
  }

  count(feed: string, stage: FeedStage, n = 1): void {
    if (n > 0) this.#counter.inc({ feed, stage }, n);
  }
}
