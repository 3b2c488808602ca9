import type { Queue, Worker } from 'bullmq';

/** What each queue file under workers/ returns. */
export interface QueueWorker {
  name: string;
  queue: Queue;
  worker: Worker;
}

/** Resolves true when `closing` settles within `ms`, false otherwise. */
async function within(closing: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([closing.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The running queue workers of a process; closes every worker before any queue. */
export class WorkerRegistry {
  readonly #entries: QueueWorker[] = [];
  readonly #graceMs: number;
  readonly #onStuck: ((queue: string) => void) | undefined;

  /**
   * @param graceMs How long a worker may take to finish its active jobs and close.
   *   @defaultValue 5000
   * @param onStuck Told about a worker that did not close in time (and was abandoned).
   */
  constructor(graceMs = 5_000, onStuck?: (queue: string) => void) {
    this.#graceMs = graceMs;
    this.#onStuck = onStuck;
  }

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

  /**
   * Closes every worker, then every queue. A worker whose close does not end within the grace
   * period is disconnected and abandoned: after Redis came back from a short outage, BullMQ
   * 6.7's worker can keep a graceful close waiting forever (seen in the readiness test). Its
   * active jobs return to the queue after their lock expires, as after a crash, and resume from
   * their persisted step.
   */
  async close(): Promise<void> {
    await Promise.all(
      this.#entries.map(async ({ worker }) => {
        const closing = worker.close();
        if (await within(closing, this.#graceMs)) return;
        this.#onStuck?.(worker.name);
        await within(worker.disconnect(), this.#graceMs);
      }),
    );
    await Promise.all(this.#entries.map((e) => e.queue.close()));
  }
}
