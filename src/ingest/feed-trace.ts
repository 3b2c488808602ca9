import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { FeedMetrics } from '../observability/feed-metrics.ts';
import { sampledTraceId } from '../observability/tracing/trace-context.ts';
import type { ReceiptHead } from '../trace/receipt-head.ts';
import type { ReceiptOutcome, ReceiptWriter } from '../trace/receipt-writer.ts';
import type { Feed } from '../trace/trace-keys.ts';
import type { UpdateCommitter } from './update-committer.ts';

/** A control id longer than this gets no receipt (it would make an unwieldy key). */
const MAX_CONTROL_ID = 200;

/** What a feed knows of a message before its outcome (see {@link ReceiptHead}). */
export type ReceiptDraft = Omit<ReceiptHead, 'sealedRaw' | 'answer' | 'at'> & {
  at?: Date;
  /** The message as received: kept, sealed, only with `trace.keep_raw`. */
  raw?: string | Buffer | undefined;
};

/**
 * One feed's side of the message trace (docs/message-trace.md): its counters
 * (`cw_feed_messages_total`) and the receipts of its messages. A stored message's receipt is
 * recorded by the commit script (the feed passes {@link head} along with the commit); one that
 * stores nothing (filtered, answered unchanged without a commit) by {@link record}, whose
 * failure is logged and never changes the answer.
 */
export class FeedTrace {
  readonly feed: Feed;
  readonly #metrics: FeedMetrics;
  readonly #committer: Pick<UpdateCommitter, 'receipts' | 'sealRaw'> | undefined;
  readonly #writer: ReceiptWriter | undefined;

  constructor(options: {
    feed: Feed;
    registry: Registry;
    /** Without it (or with the trace off) only the counters count. */
    committer?: Pick<UpdateCommitter, 'receipts' | 'sealRaw'> | undefined;
    logger: Pick<Logger, 'warn'>;
  }) {
    this.feed = options.feed;
    this.#metrics = new FeedMetrics(options.registry);
    this.#committer = options.committer;
    this.#writer = options.committer?.receipts?.withLogger(options.logger);
  }

  received(): void {
    this.#metrics.count(this.feed, 'received');
  }

  filtered(): void {
    this.#metrics.count(this.feed, 'filtered');
  }

  errored(): void {
    this.#metrics.count(this.feed, 'errored');
  }

  /** Queries opened or joined by a message of the feed. */
  queued(n: number): void {
    this.#metrics.count(this.feed, 'queued', n);
  }

  /**
   * The receipt head of a message answered `answer`, or undefined when the trace is off or the
   * message has no usable control id (then no receipt is written).
   */
  head(
    draft: Omit<ReceiptDraft, 'feed'>,
    answer: { code: string; error?: string | null },
  ): ReceiptHead | undefined {
    if (this.#writer === undefined) return undefined;
    const controlId = draft.controlId;
    if (controlId === '' || controlId.length > MAX_CONTROL_ID) return undefined;
    const sealedRaw =
      draft.raw === undefined ? undefined : this.#committer?.sealRaw(draft.raw, controlId);
    return {
      controlId,
      feed: this.feed,
      at: draft.at ?? new Date(),
      sender: draft.sender,
      type: draft.type,
      answer: { code: answer.code, error: answer.error ?? null },
      // The message's ingest span is the active one: its trace id when sampled (exported).
      traceId: draft.traceId ?? sampledTraceId(),
      ...(sealedRaw === undefined ? {} : { sealedRaw }),
    };
  }

  /** Writes the receipt of a message that stored nothing (a no-op without a head). */
  async record(head: ReceiptHead | undefined, outcome: ReceiptOutcome): Promise<void> {
    if (head === undefined || this.#writer === undefined) return;
    await this.#writer.write(head, outcome);
  }
}

/** The committer of a feed's updates when it has one (a `ClinicalUpdates`), for its receipts. */
export function committerOf(
  updates: object | undefined,
): Pick<UpdateCommitter, 'receipts' | 'sealRaw'> | undefined {
  if (updates === undefined || !('committer' in updates)) return undefined;
  return updates.committer as Pick<UpdateCommitter, 'receipts' | 'sealRaw'>;
}
