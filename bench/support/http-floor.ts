import { performance } from 'node:perf_hooks';
import type { BenchContext } from './fixtures.ts';
import { PoolClient } from './http-client.ts';
import { ChildProc, processCpuMs, waitForLine } from './processes.ts';
import type { SlicedLoop } from './raw-bullmq.ts';
import { round, summarize, type Summary } from './stats.ts';

/** What a bare `node:http` server answering 202 reaches with the ingest's load and client. */
export interface HttpFloorResult {
  requests_per_s: number | null;
  latency_ms: Summary;
  /** CPU (user + system, ms) per request of the bare server child. */
  server_cpu_ms_per_request: number | null;
  setup: string;
}

/**
 * The floor under any HTTP ingest here: `bench/http-floor-server.ts` (reads the body, answers 202,
 * nothing else) driven by the same client, concurrency and bodies as the ingest's closed loop. The
 * ingest cannot answer faster than this on the same machine. Stops the child on `close`.
 */
export async function httpFloorLoop(
  ctx: BenchContext,
  options: { clients: number; body: (i: number) => string },
): Promise<SlicedLoop<HttpFloorResult>> {
  const proc = new ChildProc(
    'http floor',
    process.execPath,
    [new URL('../http-floor-server.ts', import.meta.url).pathname],
    {},
  );
  const remove = ctx.cleanup.add('http floor', () => proc.stop());
  const { port } = JSON.parse(await waitForLine(proc, '"port"')) as { port: number };
  const client = new PoolClient('127.0.0.1', port, {});
  let seq = 0;
  const latencies: number[] = [];
  let elapsed = 0;
  let serverMs: number | null = 0;
  return {
    async run(seconds, warmup = false) {
      const before = processCpuMs(proc.pid);
      const start = performance.now();
      const deadline = start + seconds * 1_000;
      await Promise.all(
        Array.from({ length: options.clients }, async () => {
          while (performance.now() < deadline) {
            const sent = performance.now();
            const status = await client.send('POST', '/', options.body(seq++));
            if (status !== 202) throw new Error(`http floor answered ${status}`);
            if (!warmup) latencies.push(performance.now() - sent);
          }
        }),
      );
      if (warmup) return;
      elapsed += (performance.now() - start) / 1_000;
      const after = processCpuMs(proc.pid);
      serverMs =
        serverMs === null || before === undefined || after === undefined
          ? null
          : serverMs + (after - before);
    },
    result() {
      const count = latencies.length;
      return {
        requests_per_s: elapsed === 0 ? null : round(count / elapsed, 0),
        latency_ms: summarize(latencies),
        server_cpu_ms_per_request:
          serverMs === null || count === 0 ? null : round(serverMs / count, 4),
        setup:
          'bench/http-floor-server.ts: a bare node:http child that reads the body and answers 202 ' +
          `(no parsing, validation or Redis); same client, ${options.clients} in flight, same bodies`,
      };
    },
    async close() {
      await client.close();
      await proc.stop();
      remove();
    },
  };
}
