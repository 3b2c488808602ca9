import type { FeedTrace } from '../feed-trace.ts';

/**
 * Counts an answered request of the `json` feed (`cw_feed_messages_total`): each item `received`,
 * and each item of a refused request (4xx, 5xx) `errored`. A refused request writes nothing (bad
 * input changes nothing: no receipt); a stored item's receipt is the commit's. 401 and 403 are not
 * a feed's messages: not counted.
 */
export function countJsonAnswer(
  trace: FeedTrace | undefined,
  statusCode: number,
  items: number,
): void {
  if (trace === undefined || statusCode === 401 || statusCode === 403) return;
  for (let i = 0; i < items; i += 1) {
    trace.received();
    if (statusCode >= 400) trace.errored();
  }
}
