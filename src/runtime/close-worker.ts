import type { Worker } from 'bullmq';

/** How a worker's close ended (see {@link closeWorker}). */
export type WorkerCloseOutcome =
  /** Graceful: active jobs finished, the worker stopped. */
  | 'closed'
  /** Redis did not come back in time: closed without waiting for active jobs (they come back). */
  | 'forced'
  /** Even the forced close did not end in time: left behind (its jobs come back likewise). */
  | 'abandoned';

/** The parts of an ioredis client this file needs: its status and its events. */
interface ClientState {
  status: string;
  once(event: 'ready' | 'end', listener: () => void): unknown;
  off(event: 'ready' | 'end', listener: () => void): unknown;
}

/** Resolves true when `promise` settles (either way) within `ms`, false otherwise. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves when the client is `ready` (at once if it is, or if it has ended for good). */
function live(client: ClientState): Promise<void> {
  if (client.status === 'ready' || client.status === 'end') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      client.off('ready', done);
      client.off('end', done);
      resolve();
    };
    client.once('ready', done);
    client.once('end', done);
  });
}

/**
 * Closes a BullMQ worker within `budgetMs`, working around a close that never ends after a Redis
 * outage (bullmq 6.7 with ioredis 6.0; reproduced in `scripts/repro/bullmq-close-while-reconnecting.ts`).
 *
 * A graceful `Worker.close()` disconnects the worker's blocking connection and waits for its
 * `end` event. A client that lost Redis sits in `reconnecting` between attempts, and ioredis'
 * `disconnect()` there only cancels the next attempt: no `end` ever comes, and `close()` (and any
 * later `close(true)` or `disconnect()`, which share that promise or wait the same way) hangs.
 *
 * So: wait until the blocking connection is live again (at most half the budget), then close
 * gracefully (active jobs finish) with what is left. If Redis is still away, close with `force`,
 * which does not wait for `end` and not for the active jobs: those keep their lock until it
 * expires and then come back to another worker, resuming from their persisted step, as after a
 * crash. Nothing is lost either way.
 */
export async function closeWorker(worker: Worker, budgetMs: number): Promise<WorkerCloseOutcome> {
  const until = Date.now() + budgetMs;
  const remaining = () => until - Date.now();
  const seen: { blocking?: ClientState } = {};
  // The getter waits for the connection's first handshake: Redis may never have been up.
  const ready = (async () => {
    const blocking = (await worker.backend.blockingClient) as ClientState | undefined;
    seen.blocking = blocking;
    if (blocking !== undefined) await live(blocking);
  })();
  await settlesWithin(ready, budgetMs / 2);
  if (seen.blocking?.status === 'ready') {
    return (await settlesWithin(worker.close(), remaining())) ? 'closed' : 'abandoned';
  }
  return (await settlesWithin(worker.close(true), remaining())) ? 'forced' : 'abandoned';
}
