import { Queue } from 'bullmq';
import { CONCORDANCE_QUERIES } from '../../src/queues/queue-names.ts';
import { workerConnection } from '../../src/queues/redis-connections.ts';
import {
  benchPrefix,
  CATEGORY,
  configFor,
  preparePatients,
  producer,
  scheduleQueries,
  simulatorStats,
  startBenchSimulator,
  startWorker,
  until,
  workerEnv,
  writeConfig,
  type BenchContext,
} from '../support/fixtures.ts';
import {
  ChildProc,
  clearRedis,
  commandCalls,
  commandsPerItem,
  cpuMeter,
  waitForLine,
} from '../support/processes.ts';
import { round } from '../support/stats.ts';

export interface PipelineSettings {
  queries: number;
  noopJobs: number;
  concurrency: number;
}

export const DEFAULT_PIPELINE: PipelineSettings = {
  queries: 5_000,
  noopJobs: 30_000,
  concurrency: 50,
};

export interface PipelineResult {
  settings: PipelineSettings & { queries_config: object; setup: string; noop_setup: string };
  pipeline: {
    queries: number;
    seconds: number;
    queries_per_s: number | null;
    remote_jobs_submitted: number;
    failed_jobs: number;
    /** CPU (user + system) of the worker child from the first schedule call to the last result. */
    worker_cpu_ms: number | null;
    worker_cpu_ms_per_query: number | null;
    /** The Redis server's CPU over the run, per query (its own process, /proc). */
    redis_cpu_ms_per_query: number | null;
    /**
     * Redis commands per query, every client's (the worker's and the bench process's: scheduling
     * as ingest does, and its own polling of the outbound queue): the total and the most called.
     */
    redis_commands_per_query: { total: number; top: Record<string, number> };
    /**
     * The bench process's CPU per query: the local service (in this process) answering the
     * submission and the polls, plus the bench's scheduling and its checks of the outbound queue.
     */
    bench_process_cpu_ms_per_query: number | null;
    /**
     * Jobs of the `concordance-queries` queue that finished (completed or failed, BullMQ's own
     * metrics) per query: 1 per query, plus one per follow-up or resubmission.
     */
    submission_jobs_per_query: number | null;
  };
  bullmq_noop: {
    jobs: number;
    seconds: number;
    jobs_per_s: number | null;
    /** CPU (user + system) of the no-op worker child from the first add to its last completion. */
    worker_cpu_ms: number | null;
    worker_cpu_ms_per_job: number | null;
  };
  /** Pipeline queries per second / BullMQ no-op jobs per second. */
  ratio: number | null;
}

/** Finished submission jobs (BullMQ's metrics of the queue: completed + failed) per query. */
async function submissionJobsPerQuery(queue: Queue, queries: number): Promise<number | null> {
  const [completed, failed] = await Promise.all([
    queue.getMetrics('completed', 0, 0),
    queue.getMetrics('failed', 0, 0),
  ]);
  return round((completed.meta.count + failed.meta.count) / queries, 3);
}

/** The no-op BullMQ worker's lock: BullMQ's default, as a worker of 0.1 ran its query jobs. */
export const NOOP_LOCK_DURATION_MS = 30_000;

export const QUERIES_CONFIG = {
  debounce_ms: 10,
  poll: { first_delay_ms: 10, factor: 2, max_delay_ms: 100, jitter: 0.2, deadline_ms: 600_000 },
};

/**
 * Queries completed per second end to end (scheduled as ingest schedules them, claimed,
 * submitted, polled, delivered to the outbound queue) against a zero-latency local service, and
 * BullMQ's own no-op throughput on the same Redis with the same worker concurrency.
 */
export async function pipelineScenario(
  ctx: BenchContext,
  settings: PipelineSettings,
): Promise<PipelineResult> {
  const prefix = benchPrefix(ctx, 'pipeline');
  const queriesConfig = { ...QUERIES_CONFIG, concurrency: settings.concurrency };
  const configPath = writeConfig(ctx, 'pipeline', queriesConfig);
  const simulator = await startBenchSimulator(ctx, { minMs: 0, maxMs: 0 });
  const config = configFor(configPath, workerEnv(ctx, prefix, simulator.url, 0));
  const p = producer(ctx, config);
  let pipeline: PipelineResult['pipeline'];
  try {
    ctx.say(`pipeline: preparing ${settings.queries} patients`);
    const patients = await preparePatients(p, settings.queries, 'PIPE-MRN');
    const worker = await startWorker(ctx, 'pipeline worker', {
      configPath,
      prefix,
      simulatorUrl: simulator.url,
    });
    const outbound = new Queue(config.delivery.outbound_queue.name, {
      connection: p.context.redis,
      prefix,
    });
    try {
      ctx.say(`pipeline: ${settings.queries} queries through the pipeline`);
      const cpu = cpuMeter(worker.proc.pid);
      const redisCpu = cpuMeter(ctx.redis.pid);
      const benchCpu = cpuMeter(process.pid);
      const callsBefore = await commandCalls(ctx.redis.admin);
      const t0 = Date.now();
      await scheduleQueries(p, patients);
      const t1 = await until(async () => (await outbound.getWaitingCount()) >= settings.queries, {
        everyMs: 25,
        timeoutMs: 180_000,
        what: 'every result event',
      });
      const seconds = (t1 - t0) / 1_000;
      const cpuMs = cpu.used();
      const [redisMs, benchMs] = [redisCpu.used(), benchCpu.used()];
      const calls = commandsPerItem(
        callsBefore,
        await commandCalls(ctx.redis.admin),
        settings.queries,
      );
      pipeline = {
        queries: settings.queries,
        seconds: round(seconds, 2) ?? 0,
        queries_per_s: round(settings.queries / seconds, 0),
        remote_jobs_submitted: (await simulatorStats(simulator)).jobs,
        failed_jobs: await p.queue.getFailedCount(),
        worker_cpu_ms: cpuMs,
        worker_cpu_ms_per_query: perItem(cpuMs, settings.queries),
        redis_cpu_ms_per_query: perItem(redisMs, settings.queries),
        redis_commands_per_query: calls,
        bench_process_cpu_ms_per_query: perItem(benchMs, settings.queries),
        submission_jobs_per_query: await submissionJobsPerQuery(p.queue, settings.queries),
      };
    } finally {
      await outbound.close();
      await worker.stop();
    }
  } finally {
    await p.close();
    await simulator.close();
    await clearRedis(ctx.redis, prefix);
  }

  const noop = await noopScenario(ctx, settings, NOOP_LOCK_DURATION_MS);
  return {
    settings: {
      ...settings,
      queries_config: queriesConfig,
      setup:
        'simulator in the bench process with latency {minMs:0,maxMs:0}; one `concordance-worker work` child ' +
        `(LOG_LEVEL ${ctx.logLevel}); ${settings.queries} patients (crosswalk + record prepared beforehand), one ${CATEGORY} query each, ` +
        'scheduled from the bench process with QueryScheduler (what ingest calls), 64 at a time; ' +
        'time from the first schedule call to the last result event in the outbound queue (checked every 25 ms); ' +
        'each query = claim, submit (HTTP), persist, one delayed poll (HTTP), result event; ' +
        'worker_cpu_ms: user + system CPU of the worker child over the same span (/proc, 10 ms steps)',
      noop_setup:
        `a child process running a BullMQ Worker with a no-op processor and the query worker's options ` +
        `(concurrency ${settings.concurrency}, lockDuration, stalledInterval, limiter); ${settings.noopJobs} jobs added with addBulk ` +
        '(1,000 per call) while it runs; time from the first add to its last completion, and the ' +
        "child's user + system CPU over that span",
    },
    pipeline,
    bullmq_noop: noop,
    ratio:
      pipeline.queries_per_s === null || noop.jobs_per_s === null
        ? null
        : round(pipeline.queries_per_s / noop.jobs_per_s, 3),
  };
}

function perItem(cpuMs: number | null, count: number): number | null {
  return cpuMs === null ? null : round(cpuMs / count, 4);
}

/** One run of the no-op BullMQ worker child (the pipeline's baseline): `noopJobs` jobs. */
export async function noopScenario(
  ctx: BenchContext,
  settings: Pick<PipelineSettings, 'noopJobs' | 'concurrency'>,
  lockDurationMs: number,
): Promise<PipelineResult['bullmq_noop']> {
  const prefix = benchPrefix(ctx, 'noop');
  ctx.say(`pipeline: ${settings.noopJobs} no-op BullMQ jobs`);
  const proc = new ChildProc(
    'noop worker',
    process.execPath,
    [new URL('../noop-worker.ts', import.meta.url).pathname],
    {
      REDIS_URL: ctx.redis.url,
      BENCH_PREFIX: prefix,
      BENCH_QUEUE: CONCORDANCE_QUERIES,
      BENCH_CONCURRENCY: String(settings.concurrency),
      BENCH_EXPECT: String(settings.noopJobs),
      BENCH_LOCK_DURATION_MS: String(lockDurationMs),
    },
  );
  const remove = ctx.cleanup.add('noop worker', () => proc.stop());
  const connection = workerConnection(ctx.redis.url, 'cw-bench-noop');
  const queue = new Queue(CONCORDANCE_QUERIES, { connection, prefix });
  try {
    await waitForLine(proc, 'ready');
    const doneLine = waitForLine(proc, '"done"', 180_000);
    const cpu = cpuMeter(proc.pid);
    const t0 = Date.now();
    for (let i = 0; i < settings.noopJobs; i += 1_000) {
      const count = Math.min(1_000, settings.noopJobs - i);
      await queue.addBulk(
        Array.from({ length: count }, (_, j) => ({
          name: 'noop',
          data: { n: i + j, step: 'scheduled', patientServiceId: 'bench' },
          opts: { removeOnComplete: { count: 1_000, age: 3_600 } },
        })),
      );
    }
    const { at } = JSON.parse(await doneLine) as { at: number };
    const cpuMs = cpu.used();
    const seconds = (at - t0) / 1_000;
    return {
      jobs: settings.noopJobs,
      seconds: round(seconds, 2) ?? 0,
      jobs_per_s: round(settings.noopJobs / seconds, 0),
      worker_cpu_ms: cpuMs,
      worker_cpu_ms_per_job: perItem(cpuMs, settings.noopJobs),
    };
  } finally {
    await queue.close();
    connection.disconnect();
    await proc.stop();
    remove();
    await clearRedis(ctx.redis, prefix);
  }
}
