import type { Queue, Worker } from 'bullmq';

/** What each queue file under workers/ returns. */
export interface QueueWorker {
  name: string;
  queue: Queue;
  worker: Worker;
}

/** The running queue workers of a process; closes every worker before any queue. */
export class WorkerRegistry {
  readonly #entries: QueueWorker[] = [];

  add(entry: QueueWorker): void {
    this.#entries.push(entry);
  }

  get entries(): readonly QueueWorker[] {
    return this.#entries;
  }

  /** True when every worker is running (for /readyz). */
  allRunning(): boolean {
    return this.#entries.length > 0 && this.#entries.every((e) => e.worker.isRunning());
  }

  async close(): Promise<void> {
    await Promise.all(this.#entries.map((e) => e.worker.close()));
    await Promise.all(this.#entries.map((e) => e.queue.close()));
  }
}
