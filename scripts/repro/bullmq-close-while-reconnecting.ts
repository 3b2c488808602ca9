/**
 * Reproduces why a BullMQ 6.7 Worker never finishes a graceful `close()` when Redis was lost.
 *
 *   node scripts/repro/bullmq-close-while-reconnecting.ts [redis-url]
 *
 * Root cause (bullmq 6.7.0 + ioredis 6.0.0):
 * - `Worker.close()` calls `whenCurrentJobsFinished()`, which calls
 *   `backend.disconnectBlocking(true)`: `RedisConnection.disconnect(wait = true)` calls
 *   `client.disconnect()` on the worker's blocking connection and then waits for its `end` event.
 * - While Redis is unreachable, an ioredis client spends most of its time in `reconnecting`: no
 *   socket, a retry timer pending. `disconnect()` in that state clears the retry timer and does
 *   nothing else: no socket to close, so no `close`, so no `end`; the client stays `reconnecting`
 *   for ever. BullMQ's own watchdog code says as much (redis-queue-backend.js,
 *   `resetBlockedConnection`, "parks it in `reconnecting` forever (#4585)") and avoids it there,
 *   but `close()` does not: it waits for an `end` that never comes.
 * - So a SIGTERM during an outage, or in the seconds after Redis came back while the blocking
 *   connection still waits for its next reconnect attempt (ioredis backs off up to 2 s), leaves
 *   `close()` pending for ever. Our shutdown then abandoned the workers and close-with-grace
 *   exited 1 after its 10 s delay (issue 8, defect 7).
 *
 * The work-around (`src/runtime/close-worker.ts`): before `close()`, wait (bounded by the
 * shutdown grace) until the blocking connection is live again; if the grace runs out first,
 * close with `force` (which does not wait for `end`), and the active jobs come back after their
 * lock expires, resuming from their persisted step.
 *
 * The script prints what it sees and exits 0 when the hang reproduced and the work-around closed.
 */
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { TcpProxy } from '../../tools/tcp-proxy.ts';

const target = process.argv[2] ?? 'redis://127.0.0.1:6379';
const started = Date.now();
const say = (what: string, extra: Record<string, unknown> = {}) =>
  console.log(JSON.stringify({ t_ms: Date.now() - started, what, ...extra }));
const settledWithin = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise.then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), ms).unref()),
  ]);

async function worker(url: string, name: string) {
  const connection = new Redis(url, { maxRetriesPerRequest: null });
  connection.on('error', () => undefined);
  const w = new Worker(name, async () => undefined, {
    connection,
    prefix: `{repro-${process.pid}}`,
  });
  w.on('error', () => undefined);
  await w.waitUntilReady();
  const blocking = await w.backend.blockingClient;
  if (blocking === undefined) throw new Error('no blocking client');
  return { w, connection, blocking: blocking as unknown as Redis };
}

const proxy = await TcpProxy.start(target);

// 1. The hang: Redis goes away; close() while the blocking connection is between retries.
const a = await worker(proxy.redisUrl, 'a');
await proxy.refuse();
await new Promise<void>((resolve) => a.blocking.once('reconnecting', () => resolve()));
say('redis refused; blocking connection', { status: a.blocking.status });
const hung = !(await settledWithin(a.w.close(), 5_000));
say(hung ? 'close() still pending after 5 s' : 'close() resolved', {
  blocking_status: a.blocking.status,
});

// 2. The work-around: wait until the blocking connection is live, then close.
await proxy.forward();
const b = await worker(proxy.redisUrl, 'b');
await proxy.refuse();
await new Promise<void>((resolve) => b.blocking.once('reconnecting', () => resolve()));
await proxy.forward();
say('redis back; blocking connection', { status: b.blocking.status });
if (b.blocking.status !== 'ready') {
  await new Promise<void>((resolve) => b.blocking.once('ready', () => resolve()));
}
const closed = await settledWithin(b.w.close(), 5_000);
say(closed ? 'close() after ready resolved' : 'close() after ready still pending');

for (const c of [a.connection, b.connection, a.blocking]) c.disconnect();
await proxy.close();
process.exit(hung && closed ? 0 : 1);
