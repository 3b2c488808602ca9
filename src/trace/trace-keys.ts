/**
 * The keys of the message trace (docs/message-trace.md). Every key lives under a partition's prefix
 * (its hash tag): a message's receipts and the patient's index under the patient's partition, so
 * that the commit script writes them with the record; a query's and a result event's steps under
 * the same partition, so that the scripts that already write the query's state write them too.
 * A message refused before its patient is known goes to the partition its control id hashes to.
 *
 * No key or value names a patient identifier: the patient is its random service id (`psid`), which
 * only the sealed crosswalk links to a local id.
 */

/** The feeds a message comes through: the `feed` label of `cw_feed_messages_total`. */
export const FEEDS = ['hl7v2-mllp', 'hl7v2-http', 'fhir', 'json'] as const;
export type Feed = (typeof FEEDS)[number];

/**
 * The receipts of one control id (a Redis list of {@link MessageReceipt} JSON, oldest first, at
 * most `trace.max_receipts`): MSH-10 for HL7 v2, the notification's event number or the Bundle id
 * for FHIR, `event_id` (or the one generated and answered) for JSON.
 */
export function receiptsKey(prefix: string, controlId: string): string {
  return `${prefix}:trace:m:${controlId}`;
}

/** The control ids of one patient's messages (sorted set, scored by receipt time, epoch ms). */
export function patientMessagesKey(prefix: string, patientServiceId: string): string {
  return `${prefix}:trace:p:${patientServiceId}`;
}

/**
 * The partition's recent control ids (sorted set, scored by receipt time, epoch ms; at most
 * {@link RECENT_MESSAGES_CAP}): the queue view's Messages page.
 */
export function recentMessagesKey(prefix: string): string {
  return `${prefix}:trace:recent`;
}

/** The most control ids {@link recentMessagesKey} keeps per partition (the oldest go first). */
export const RECENT_MESSAGES_CAP = 10_000;

/**
 * The steps of one query (hash; see {@link QueryTraceFields}): the query `<psid>|<category>|<seq>`
 * of the outbox and the poll set.
 */
export function queryTraceKey(
  prefix: string,
  patientServiceId: string,
  category: string,
  seq: number | string,
): string {
  return `${prefix}:trace:q:${patientServiceId}:${category}:${seq}`;
}

/** The delivery steps of one result event (hash; see {@link DeliveryTraceFields}). */
export function deliveryTraceKey(prefix: string, eventId: string): string {
  return `${prefix}:trace:e:${eventId}`;
}

/** `trace.retention_days` in seconds: every trace key expires this long after its last write. */
export function traceTtlSeconds(retentionDays: number): number {
  return retentionDays * 86_400;
}
