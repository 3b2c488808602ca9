import type { Feed } from './trace-keys.ts';
import type { MessageReceipt } from './message-trace.ts';

/**
 * What a message's receipt says before its outcome is known: everything but `state`, `psid`,
 * `version` and `queries`, which the commit script fills from what it did (see
 * src/ingest/lua/includes/commit-receipt.lua), or {@link ReceiptWriter} for a message that stores
 * nothing.
 */
export interface ReceiptHead {
  /** The sender's control id: MSH-10, the FHIR event number or Bundle id, the JSON `event_id`. */
  controlId: string;
  feed: Feed;
  /** When it was received. */
  at: Date;
  sender: { application: string | null; facility: string | null };
  type: string | null;
  /** The ACK code (`AA`, `AE`, `AR`) or HTTP status it is answered, and the `ERR_*` of a refusal. */
  answer: { code: string; error: string | null };
  traceId: string | null;
  /** With `trace.keep_raw`: the message, already sealed (see {@link rawSealContext}). */
  sealedRaw?: string | undefined;
}

/**
 * The context (AES-GCM associated data) a raw message is sealed under with the crosswalk keys:
 * `trace --raw` opens it with the same context.
 */
export function rawSealContext(controlId: string): string {
  return `trace-raw:${controlId}`;
}

/** The receipt's fields known before the outcome, as an object (the receipt without its outcome). */
export function receiptHeadFields(
  head: ReceiptHead,
): Omit<MessageReceipt, 'state' | 'psid' | 'version' | 'queries'> {
  return {
    at: head.at.getTime(),
    feed: head.feed,
    sender: head.sender,
    type: head.type,
    answer: head.answer,
    trace_id: head.traceId,
    ...(head.sealedRaw === undefined ? {} : { raw: head.sealedRaw }),
  };
}

/** The head as the JSON object the commit script completes (ARGV of `commit.lua`). */
export function receiptHeadJson(head: ReceiptHead): string {
  return JSON.stringify(receiptHeadFields(head));
}
