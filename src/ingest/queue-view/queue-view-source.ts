import type { Queue } from 'bullmq';
import type { DeadLetterStore } from '../../delivery/dead-letter-store.ts';
import type { PollListing } from '../../queries/poll-listing.ts';
import type { MessageTraceReader } from '../../trace/message-trace-reader.ts';

/** Where a queue or a store of the view lives: its partition and that partition's key prefix. */
export interface QueueViewPlace {
  partition: number;
  prefix: string;
}

/**
 * What the queue view shows, as the composition root opens it (`App.queueView`): the BullMQ
 * queues of the deployment, each partition's dead letters and each partition's queries being
 * polled, and the message trace, opened for reading only.
 */
export interface QueueViewSource {
  /** `redis.partitions`. */
  partitions: number;
  /**
   * The deployment's queues now: a queue of another role's configuration (the webhook's, say)
   * appears once it exists in Redis. Each queue is opened once and kept until {@link close}.
   */
  queues(): Promise<(QueueViewPlace & { queue: Queue })[]>;
  /** Each partition's dead letters (read as summaries, without the crosswalk keys). */
  deadLetters: readonly (QueueViewPlace & { store: DeadLetterStore })[];
  /** Each partition's queries being polled (its poll set, read a page at a time). */
  polls: readonly (QueueViewPlace & { listing: PollListing })[];
  /**
   * The message trace of every partition, for the Messages pages (read with the reader's
   * `recent` and `byControlId` only), and whether the trace is written (`trace.enabled`).
   */
  messages: {
    reader: Pick<MessageTraceReader, 'recent' | 'byControlId'>;
    traceEnabled: boolean;
  };
  /** Closes the queues it opened (not the connection, which is the caller's). */
  close(): Promise<void>;
}
