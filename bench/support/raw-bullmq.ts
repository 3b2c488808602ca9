import { performance } from 'node:perf_hooks';
import { Queue } from 'bullmq';
import { workerConnection } from '../../src/queues/redis-connections.ts';
import type { BenchContext } from './fixtures.ts';
import { clearRedis, processCpuMs } from './processes.ts';
import { round, summarize, type Summary } from './stats.ts';

/** The baseline of an ingest figure: bare BullMQ adds from the bench process, same Redis. */
export interface RawAddResult {
  /** `add` (one job per call) or `addBulk` (`jobs_per_call` per call). */
  call: 'add' | 'addBulk';
  jobs_per_call: number;
  /** Calls in flight at once (each caller awaits its call before the next). */
  concurrency: number;
  /** Measured time, summed over the slices (see {@link interleave}). */
  seconds: number;
  jobs: number;
  jobs_per_s: number | null;
  /** Per call, from its start to its answer. */
  call_latency_ms: Summary;
  /** CPU (user + system, ms) per job of the bench process (the caller) and of redis-server. */
  cpu_ms_per_job: { caller: number | null; redis: number | null };
  setup: string;
}

export interface RawAddOptions {
  /** Key prefix of the baseline's queue (deleted at the end). */
  prefix: string;
  concurrency: number;
  /** Jobs per call: 1 is `queue.add`, more is `queue.addBulk`. */
  jobsPerCall: number;
  /** The job data of the `i`-th job (the ingest payload, so that both move the same bytes). */
  data: (i: number) => object;
}

/** Bench-process CPU (user + system) in ms since `start` (`process.cpuUsage`). */
export function selfCpuMs(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1_000;
}

/** A closed loop measured in slices: each `run` adds its time, counts and CPU to the totals. */
export interface SlicedLoop<R> {
  /** Runs `seconds` more (unmeasured when `warmup`). */
  run(seconds: number, warmup?: boolean): Promise<void>;
  result(): R;
  close(): Promise<void>;
}

/**
 * Runs the loops side by side in time: `rounds` rounds, each giving every loop `seconds / rounds`
 * in turn, so that all of them see the same machine (other work on a shared machine comes and
 * goes within seconds; a baseline measured a minute apart would not share it).
 */
export async function interleave(
  loops: readonly SlicedLoop<unknown>[],
  seconds: number,
  rounds: number,
): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    for (const loop of loops) await loop.run(seconds / rounds);
  }
}

/**
 * Bare BullMQ producers in the bench process: `concurrency` callers each awaiting `queue.add` (or
 * `queue.addBulk` of `jobsPerCall` jobs) back to back, on their own connection to the same Redis
 * as the scenario it is the baseline of. Jobs are left waiting (no worker), as an ingest update
 * leaves its query for the workers. Deletes its keys on `close`.
 */
export async function rawAddLoop(
  ctx: BenchContext,
  options: RawAddOptions,
): Promise<SlicedLoop<RawAddResult>> {
  const connection = workerConnection(ctx.redis.url, 'cw-bench-raw-add');
  const queue = new Queue('bench-raw-add', { connection, prefix: options.prefix });
  await queue.waitUntilReady();
  const call = options.jobsPerCall === 1 ? 'add' : 'addBulk';
  let seq = 0;
  const once = async () => {
    if (options.jobsPerCall === 1) {
      await queue.add('update', options.data(seq++));
      return;
    }
    await queue.addBulk(
      Array.from({ length: options.jobsPerCall }, () => ({
        name: 'update',
        data: options.data(seq++),
      })),
    );
  };
  const latencies: number[] = [];
  let elapsed = 0;
  let callerMs = 0;
  let redisMs: number | null = 0;
  return {
    async run(seconds, warmup = false) {
      const self = process.cpuUsage();
      const redisBefore = processCpuMs(ctx.redis.pid);
      const start = performance.now();
      const deadline = start + seconds * 1_000;
      await Promise.all(
        Array.from({ length: options.concurrency }, async () => {
          while (performance.now() < deadline) {
            const sent = performance.now();
            await once();
            if (!warmup) latencies.push(performance.now() - sent);
          }
        }),
      );
      if (warmup) return;
      elapsed += (performance.now() - start) / 1_000;
      callerMs += selfCpuMs(self);
      const redisAfter = processCpuMs(ctx.redis.pid);
      redisMs =
        redisMs === null || redisBefore === undefined || redisAfter === undefined
          ? null
          : redisMs + (redisAfter - redisBefore);
    },
    result() {
      const jobs = latencies.length * options.jobsPerCall;
      return {
        call,
        jobs_per_call: options.jobsPerCall,
        concurrency: options.concurrency,
        seconds: round(elapsed, 2) ?? 0,
        jobs,
        jobs_per_s: elapsed === 0 ? null : round(jobs / elapsed, 0),
        call_latency_ms: summarize(latencies),
        cpu_ms_per_job: {
          caller: jobs === 0 ? null : round(callerMs / jobs, 4),
          redis: jobs === 0 || redisMs === null ? null : round(redisMs / jobs, 4),
        },
        setup:
          `BullMQ ${call} from the bench process on its own connection, ${options.concurrency} ` +
          `call(s) in flight, ${options.jobsPerCall} job(s) per call, each job's data the ingest ` +
          'payload (as parsed JSON); jobs stay waiting (no worker); same Redis; measured in ' +
          "slices interleaved with the ingest's",
      };
    },
    async close() {
      await queue.close();
      connection.disconnect();
      await clearRedis(ctx.redis, options.prefix);
    },
  };
}
