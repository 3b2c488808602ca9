import { performance } from 'node:perf_hooks';
import type { BenchContext } from './fixtures.ts';
import { PoolClient } from './http-client.ts';
import { ChildProc, processCpuMs, waitForLine } from './processes.ts';
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
 * nothing else) driven by the same client, concurrency, bodies and duration as the ingest's closed
 * loop. The ingest cannot answer faster than this on the same machine.
 */
export async function httpFloor(
  ctx: BenchContext,
  options: { clients: number; seconds: number; warmupSeconds: number; body: (i: number) => string },
): Promise<HttpFloorResult> {
  const proc = new ChildProc(
    'http floor',
    process.execPath,
    [new URL('../http-floor-server.ts', import.meta.url).pathname],
    {},
  );
  const remove = ctx.cleanup.add('http floor', () => proc.stop());
  try {
    const { port } = JSON.parse(await waitForLine(proc, '"port"')) as { port: number };
    const client = new PoolClient('127.0.0.1', port, {});
    let seq = 0;
    const run = async (seconds: number) => {
      const latencies: number[] = [];
      const start = performance.now();
      const deadline = start + seconds * 1_000;
      await Promise.all(
        Array.from({ length: options.clients }, async () => {
          while (performance.now() < deadline) {
            const sent = performance.now();
            const status = await client.send('POST', '/', options.body(seq++));
            if (status !== 202) throw new Error(`http floor answered ${status}`);
            latencies.push(performance.now() - sent);
          }
        }),
      );
      return { latencies, elapsed: (performance.now() - start) / 1_000 };
    };
    try {
      await run(options.warmupSeconds);
      const before = processCpuMs(proc.pid);
      const measured = await run(options.seconds);
      const after = processCpuMs(proc.pid);
      const count = measured.latencies.length;
      return {
        requests_per_s: round(count / measured.elapsed, 0),
        latency_ms: summarize(measured.latencies),
        server_cpu_ms_per_request:
          before === undefined || after === undefined || count === 0
            ? null
            : round((after - before) / count, 4),
        setup:
          'bench/http-floor-server.ts: a bare node:http child that reads the body and answers 202 ' +
          `(no parsing, validation or Redis); same client, ${options.clients} in flight, same bodies`,
      };
    } finally {
      await client.close();
    }
  } finally {
    await proc.stop();
    remove();
  }
}
