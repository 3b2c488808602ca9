import { z } from 'zod';
import { FEEDS } from './trace-keys.ts';

/**
 * One receipt of a message, as kept under its control id (`receiptsKey`): what came, from whom,
 * what it was answered, and what it did. Written by the step that answers it (the commit script for
 * a stored message, ingest itself for one filtered or answered unchanged), never with a patient identifier.
 */
export const MessageReceiptSchema = z.object({
  /** When it was received, epoch ms. */
  at: z.number(),
  feed: z.enum(FEEDS),
  /** MSH-3/MSH-4 for HL7 v2; the FHIR subscription's or the JSON body's `source`; null when none. */
  sender: z.object({ application: z.string().nullable(), facility: z.string().nullable() }),
  /** The message type: `ADT^A08`, `Bundle`/`notification`, `record-update`. */
  type: z.string().nullable(),
  /**
   * What it was answered: the ACK code (`AA`, `AE`, `AR`) or the HTTP status, and the error code
   * (`ERR_*`) of a refusal.
   */
  answer: z.object({ code: z.string(), error: z.string().nullable() }),
  /**
   * What it came to: `queued` (queries opened or joined), `unchanged` (the record as it was, its
   * queries already run), `stored` (stored, no query: no preset, opted out), `duplicate` (its
   * event id seen before), `filtered` (no usable content, or a type not used). A refused message (AE, AR,
   * HTTP 4xx/5xx) has no receipt: bad input changes nothing (it is counted `errored` and logged).
   */
  state: z.enum(['queued', 'unchanged', 'stored', 'duplicate', 'filtered']),
  /** The patient, as its random service id (never a local identifier); null when not known. */
  psid: z.string().nullable(),
  /** The record version it left; null when nothing was stored. */
  version: z.int().nullable(),
  /** The queries it opened or joined (`coalesced`). */
  queries: z.array(z.object({ category: z.string(), seq: z.int(), coalesced: z.boolean() })),
  /** The OpenTelemetry trace id of its ingest span, when tracing is on. */
  trace_id: z.string().nullable(),
  /** With `trace.keep_raw`: the message as received, sealed under the crosswalk key. */
  raw: z.string().nullable().optional(),
});
export type MessageReceipt = z.infer<typeof MessageReceiptSchema>;

/**
 * The steps of one query (`queryTraceKey`), each written by the script of the step: times are epoch
 * ms. Every field is optional: a query shows as far as it went.
 */
export const QueryTraceSchema = z.object({
  /** The commit script, when it opened the query, and the feed of the message that did. */
  opened_at: z.coerce.number().optional(),
  feed: z.enum(FEEDS).optional(),
  /** Messages that opened or joined it. */
  messages: z.coerce.number().optional(),
  /**
   * With tracing on: the W3C `traceparent` of the ingest span of the first message that opened or
   * joined it in a sampled trace, which the workers' spans continue (docs/opentelemetry.md).
   */
  tp: z.string().optional(),
  /** The relay, when it added the submission job to `concordance-queries`, and the job's id. */
  queued_at: z.coerce.number().optional(),
  job_id: z.string().optional(),
  /** The submission: runs of its job, the first run's time, its last transient failure's code. */
  attempts: z.coerce.number().optional(),
  claimed_at: z.coerce.number().optional(),
  last_error: z.string().optional(),
  /** When the service answered the POST, and the remote job's id. */
  submitted_at: z.coerce.number().optional(),
  remote_job_id: z.string().optional(),
  /** Polls made, and the last one's time. */
  polls: z.coerce.number().optional(),
  last_poll_at: z.coerce.number().optional(),
  /** How it ended (`completed`, `failed`, `lost`, `timed_out`, `rejected`, `superseded`). */
  ended_at: z.coerce.number().optional(),
  outcome: z.string().optional(),
  error_code: z.string().optional(),
  /** Its result event's id: the key of its delivery trace. */
  event_id: z.string().optional(),
});
export type QueryTrace = z.infer<typeof QueryTraceSchema>;

/** The delivery of one result event (`deliveryTraceKey`), per channel. */
export const DeliveryTraceSchema = z.object({
  /**
   * The feed of the message that opened the event's query, copied from the query's trace by the
   * claim and the poll's end: what `delivered` is counted by.
   */
  feed: z.enum(FEEDS).optional(),
  /**
   * With tracing on: the W3C `traceparent` the webhook attempt's span continues — the query's
   * submission span (written by `mark-submitted`, before any poll can hand the event over), else
   * the message's ingest span (copied from the query's trace by the claim).
   */
  tp: z.string().optional(),
  /** Change-only delivery held the event back: its result equals the last one delivered. */
  unchanged_at: z.coerce.number().optional(),
  /** The outbound queue: when the event was added. */
  outbound_at: z.coerce.number().optional(),
  /** The webhook: attempts, the first and last, the last answer (HTTP status or error), the end. */
  webhook_attempts: z.coerce.number().optional(),
  webhook_first_at: z.coerce.number().optional(),
  webhook_last_at: z.coerce.number().optional(),
  webhook_last_answer: z.string().optional(),
  /** `delivered` or `dead` (dead-lettered), once it ended. */
  webhook_state: z.string().optional(),
  webhook_ended_at: z.coerce.number().optional(),
});
export type DeliveryTrace = z.infer<typeof DeliveryTraceSchema>;
