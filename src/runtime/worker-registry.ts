import type { Queue, Worker } from 'bullmq';
import { closeWorker, settlesWithin, type WorkerCloseOutcome } from './close-worker.ts';

/** What each queue file under workers/ returns. */
export interface QueueWorker {
  name: string;
  queue: Queue;
  /** The BullMQ worker (closed with closeWorker). */
  worker?: Worker;
  /** True while what runs beside the BullMQ worker runs. @defaultValue true */
  running?: () => boolean;
  /**
   * Stops what runs beside the BullMQ worker (the queries' relay and poller); false when it had
   * to leave work in flight (Redis unreachable: it comes back when its leases run out).
   */
  stop?: () => Promise<boolean>;
}

const SEVERITY: Record<WorkerCloseOutcome, number> = { closed: 0, forced: 1, abandoned: 2 };

/** The worse of two close outcomes (`abandoned` over `forced` over `closed`). */
export function worseOutcome(a: WorkerCloseOutcome, b: WorkerCloseOutcome): WorkerCloseOutcome {
  return SEVERITY[b] > SEVERITY[a] ? b : a;
}

/** The running queue workers of a process; closes every worker before any queue. */
export class WorkerRegistry {
  readonly #entries: QueueWorker[] = [];
  readonly #budgetMs: number;
  readonly #onClosed: ((queue: string, outcome: WorkerCloseOutcome) => void) | undefined;

  /**
   * @param budgetMs How long closing every worker and queue may take in all (the workers close
   *   in parallel).
   *   @defaultValue 5000
   * @param onClosed Told how each worker's close ended (see {@link closeWorker}).
   */
  constructor(budgetMs = 5_000, onClosed?: (queue: string, outcome: WorkerCloseOutcome) => void) {
    this.#budgetMs = budgetMs;
    this.#onClosed = onClosed;
  }

  add(entry: QueueWorker): void {
    this.#entries.push(entry);
  }

  get entries(): readonly QueueWorker[] {
    return this.#entries;
  }

  /** True when every worker is running (for /readyz). */
  allRunning(): boolean {
    return (
      this.#entries.length > 0 &&
      this.#entries.every((e) => (e.worker?.isRunning() ?? true) && (e.running?.() ?? true))
    );
  }

  /**
   * Closes every worker (see {@link closeWorker}: gracefully when Redis answers, else forced),
   * then every queue, within the budget; a queue whose close does not end in time (Redis gone) is
   * left behind. Nothing is lost by leaving: unfinished jobs come back after their lock expires.
   */
  async close(): Promise<void> {
    const until = Date.now() + this.#budgetMs;
    await Promise.all(
      this.#entries.map(async ({ name, worker, stop }) => {
        // A tenth of the budget is kept for the queues.
        const budget = (until - Date.now()) * 0.9;
        const stopped: { clean?: boolean } = {};
        const [outcome, settled] = await Promise.all([
          worker === undefined ? undefined : closeWorker(worker, budget),
          stop === undefined
            ? undefined
            : settlesWithin(
                stop().then((clean) => {
                  stopped.clean = clean;
                }),
                budget,
              ),
        ]);
        const ownOutcome: WorkerCloseOutcome =
          settled === false ? 'abandoned' : stopped.clean === false ? 'forced' : 'closed';
        // The worse of the two: a BullMQ worker that closed gracefully does not hide a relay or
        // poller that had to leave work in flight (nor the other way round).
        this.#onClosed?.(name, worseOutcome(outcome ?? 'closed', ownOutcome));
      }),
    );
    await settlesWithin(Promise.all(this.#entries.map((e) => e.queue.close())), until - Date.now());
  }
}
