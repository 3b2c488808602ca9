import type { ResultEvent } from '../interface/result-event.ts';

/**
 * Where finished queries go. The same structural interface as the query worker's `ResultSink`
 * (re-declared here because the domain never imports `workers/`).
 */
export interface ResultSink {
  deliver(event: ResultEvent): Promise<void>;
  /** Hands over several events at once (one bulk add where the channel can). */
  deliverMany?(events: readonly ResultEvent[]): Promise<void>;
}

/** One way of handing result events to the hospital (the outbound queue, the webhook). */
export interface DeliveryChannel extends ResultSink {
  /** The `channel` label of the delivery metrics: `queue` or `webhook`. */
  readonly name: string;
  /**
   * True when the channel counts its own delivery outcomes (the webhook, whose deliveries happen
   * later, in its worker). Otherwise handing the event over is its delivery, and the router counts it.
   */
  readonly reportsOutcomes?: boolean;
  close(): Promise<void>;
}
