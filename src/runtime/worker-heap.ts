import { setFlagsFromString } from 'node:v8';

/**
 * V8's heap growing factor for the worker roles (`work`, `start`): a full collection once the old
 * space has grown by half, rather than by V8's default factor, which on a large machine lets a
 * worker's short-lived garbage (ioredis replies, BullMQ activations, HTTP answers) pile up to
 * about four times its live heap. A V8 flag that takes effect while the process runs. Measured
 * with a paced import of 20,000 patients (`npm run bench -- --only bulk_import`): worker peak RSS
 * 541 MiB -> 354 MiB; `npm run bench -- --only pipeline`: pipeline ratio 0.091 -> 0.092, worker
 * CPU per query 0.76 -> 0.78 ms. See docs/operations.md, "Worker memory".
 */
export const WORKER_HEAP_GROWING_PERCENT = 50;

/** Sets {@link WORKER_HEAP_GROWING_PERCENT} for this process (once is enough; again is harmless). */
export function tuneWorkerHeap(): void {
  setFlagsFromString(`--heap-growing-percent=${WORKER_HEAP_GROWING_PERCENT}`);
}
