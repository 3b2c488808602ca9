import { Queue } from 'bullmq';
import {
  configFor,
  preparePatients,
  producer,
  scheduleQueries,
  startWorker,
  until,
  workerEnv,
  type BenchContext,
  type Producer,
  type RunningWorker,
} from './fixtures.ts';
import { clearRedis, cpuMeter } from './processes.ts';
import type { SlicedLoop } from './raw-bullmq.ts';
import { round } from './stats.ts';

/** What a pipeline line measured, summed over its slices. */
export interface PipelineLineResult {
  queries: number;
  seconds: number;
  queries_per_s: number | null;
  /** CPU (user + system, ms) of the line's worker child over its slices, per query. */
  worker_cpu_ms_per_query: number | null;
}

/**
 * One `concordance-worker work` child under its own prefix, with its own patients, driven in
 * slices (a {@link SlicedLoop} whose `run` argument is a count of queries, not seconds): each
 * slice schedules that many queries for patients not used before (as ingest would) and waits until
 * each one's result is in the outbound queue; time and the worker's CPU add up over the slices.
 */
export interface PipelineLine extends SlicedLoop<PipelineLineResult> {
  worker: RunningWorker;
}

export async function startPipelineLine(
  ctx: BenchContext,
  options: {
    name: string;
    prefix: string;
    configPath: string;
    simulatorUrl: string;
    /** Patients prepared: every query of every slice, warm-up included, needs its own. */
    patients: number;
    /** More environment of the worker child (and of the config the bench process reads). */
    env: Record<string, string>;
  },
): Promise<PipelineLine> {
  const { prefix, configPath, simulatorUrl } = options;
  const config = configFor(configPath, {
    ...workerEnv(ctx, prefix, simulatorUrl, 0),
    ...options.env,
  });
  const p: Producer = producer(ctx, config);
  const patients = await preparePatients(
    p,
    options.patients,
    `TRACE-MRN-${options.name.replaceAll(/[^A-Za-z0-9]+/g, '-')}`,
  );
  const worker = await startWorker(ctx, options.name, {
    configPath,
    prefix,
    simulatorUrl,
    env: options.env,
  });
  const outbound = new Queue(config.delivery.outbound_queue.name, {
    connection: p.context.redis,
    prefix,
  });
  let next = 0;
  let delivered = 0;
  const totals = { queries: 0, seconds: 0, cpuMs: 0 as number | null };
  return {
    worker,
    async run(queries, warmup = false) {
      const slice = patients.slice(next, next + queries);
      if (slice.length < queries) throw new Error(`${options.name}: out of prepared patients`);
      next += queries;
      const cpu = cpuMeter(worker.proc.pid);
      const t0 = Date.now();
      await scheduleQueries(p, slice);
      const target = delivered + queries;
      const t1 = await until(async () => (await outbound.getWaitingCount()) >= target, {
        everyMs: 25,
        timeoutMs: 180_000,
        what: `${options.name}: every result event`,
      }).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}; worker output:\n${worker.proc.tail()}`);
      });
      const used = cpu.used();
      delivered = target;
      if (warmup) return;
      totals.queries += queries;
      totals.seconds += (t1 - t0) / 1_000;
      totals.cpuMs = totals.cpuMs === null || used === null ? null : totals.cpuMs + used;
    },
    result: () => ({
      queries: totals.queries,
      seconds: round(totals.seconds, 2) ?? 0,
      queries_per_s: totals.seconds === 0 ? null : round(totals.queries / totals.seconds, 0),
      worker_cpu_ms_per_query:
        totals.cpuMs === null || totals.queries === 0
          ? null
          : round(totals.cpuMs / totals.queries, 4),
    }),
    async close() {
      await outbound.close();
      await worker.stop();
      await p.close();
      await clearRedis(ctx.redis, prefix);
    },
  };
}
