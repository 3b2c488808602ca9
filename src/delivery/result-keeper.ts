import type { ResultEvent } from '../interface/result-event.ts';

/**
 * Keeps results beside the delivery (the CDS Hooks service's kept results, src/cds): the router
 * hands it every event it checked, those `only_changed` suppresses included, with the channels. A
 * keeper that throws fails the hand-over, so the query job retries it; keeping is idempotent and
 * never lets an older result replace a newer one.
 */
export interface ResultKeeper {
  keep(events: readonly ResultEvent[]): Promise<void>;
}
