import type { ResultEvent } from '../interface/result-event.ts';

/** Seconds from the last record update a result covers to `now`, when the event names one. */
export function updateToDeliverySeconds(event: ResultEvent, now: number): number | undefined {
  const last = event.triggered_by.last_update_at;
  if (last === null) return undefined;
  const at = Date.parse(last);
  return Number.isNaN(at) ? undefined : Math.max(0, (now - at) / 1000);
}
