import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ResultEvent } from './result-event.ts';

export interface OutboundQueueChannelOptions {
  connection: Redis;
  prefix: string;
  /** @defaultValue 'concordance-results' */
  name: string;
  /** How many consumed events to keep, and for how long (seconds). */
  retention: { count: number; age_s: number };
}

/**
 * Hands result events to the hospital's own consumers through a BullMQ queue. The job id is the
 * event id, so a redelivery after a crash adds nothing.
 */
export class OutboundQueueChannel {
  readonly name = 'queue';
  readonly queue: Queue<ResultEvent>;
  readonly #retention: OutboundQueueChannelOptions['retention'];

  constructor({ connection, prefix, name, retention }: OutboundQueueChannelOptions) {
    this.queue = new Queue<ResultEvent>(name, { connection, prefix });
    this.#retention = retention;
  }

  async deliver(event: ResultEvent): Promise<void> {
    const keep = { count: this.#retention.count, age: this.#retention.age_s };
    await this.queue.add(event.type, event, {
      jobId: event.id,
      removeOnComplete: keep,
      removeOnFail: keep,
    });
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
