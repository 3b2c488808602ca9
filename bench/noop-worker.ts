/**
 * A BullMQ worker with a no-op processor, started by the bench as a child process (the baseline
 * of the pipeline scenario). Prints `ready` once connected, then one JSON line
 * `{"done": N, "at": epochMs}` when BENCH_EXPECT jobs have completed. Ends on SIGTERM.
 */
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};

const connection = new Redis(env('REDIS_URL'), { maxRetriesPerRequest: null });
const expect = Number(env('BENCH_EXPECT'));
const lockDuration = Number(env('BENCH_LOCK_DURATION_MS'));
let done = 0;
const worker = new Worker(env('BENCH_QUEUE'), async () => undefined, {
  connection,
  prefix: env('BENCH_PREFIX'),
  concurrency: Number(env('BENCH_CONCURRENCY')),
  // The same options as the query worker (workers/concordance-queries.ts).
  lockDuration,
  stalledInterval: lockDuration,
  maxStalledCount: 10,
  limiter: { max: 1_000_000, duration: 1_000 },
});
worker.on('completed', () => {
  done += 1;
  if (done === expect) process.stdout.write(`${JSON.stringify({ done, at: Date.now() })}\n`);
});
await worker.waitUntilReady();
process.stdout.write('ready\n');

const stop = async () => {
  await worker.close();
  connection.disconnect();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
