import { Queue } from 'bullmq';
import { LegacyQueryJobDataSchema } from '../../src/queries/query-job.ts';
import {
  benchPrefix,
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
import { metricTotal, parseHistogram } from '../support/metrics-text.ts';
import { clearRedis, processMemory, usedMemory } from '../support/processes.ts';
import { histogramQuantile, MiB, round, summarize, type Summary } from '../support/stats.ts';

export interface InflightSettings {
  queries: number;
  windowSeconds: number;
  jobLatencyMs: number;
  concurrency: number;
}

/**
 * Remote jobs take 10 minutes so that none ends before the window does: every query is in flight
 * throughout, while the worker keeps polling all of them.
 */
export const DEFAULT_INFLIGHT: InflightSettings = {
  queries: 100_000,
  windowSeconds: 60,
  jobLatencyMs: 600_000,
  concurrency: 50,
};

export interface InflightResult {
  settings: InflightSettings & {
    queries_config: object;
    setup: string;
    memory_method: string;
    lateness_method: string;
  };
  submit_seconds: number;
  /** Queries whose result event was already in when the window began (0 when jobs outlast it). */
  completed_before_window: number;
  worker_rss_mib: {
    idle: number | null;
    /** The largest of the samples taken every ~200 ms while the queries were being submitted. */
    max_while_submitting: number | null;
    all_submitted: number | null;
    /** The largest of the samples taken every second through the window. */
    max_in_window: number | null;
    peak_hwm: number | null;
  };
  redis: {
    accurate: boolean;
    used_memory_mib: { empty: number; with_patients: number; all_in_flight: number };
    bytes_per_inflight_query: {
      queue_and_state: number | null;
      including_patient_record_and_crosswalk: number | null;
    };
  };
  poll_lateness_ms: {
    sampled_active_jobs: Summary & { discarded_advanced: number };
    /** A quantile in the +Inf bucket reads as the top bucket's bound: see beyond_top_bucket. */
    worker_histogram: {
      count: number;
      p50: number | null;
      p99: number | null;
      beyond_top_bucket: number;
      top_bucket_ms: number;
    } | null;
  };
  completed_during_window: number;
  /** cw_polls_total over the window (null when the worker does not count polls). */
  polls_in_window: number | null;
  polls_per_s_in_window: number | null;
  /** nodejs_heap_size_used_bytes of the worker at the end of the window. */
  worker_heap_used_mib: number | null;
  /**
   * cw_submit_window_seconds over every submission of the run: from sending a POST to its remote
   * job id being stored, the time in which a killed worker would submit its query again.
   */
  submit_window_ms: {
    count: number;
    mean: number | null;
    p50: number | null;
    p99: number | null;
  } | null;
}

interface Scrape {
  lateness?: { buckets: [number, number][]; count: number };
  submitWindow?: { buckets: [number, number][]; count: number; sum: number };
  polls?: number;
  heapUsed?: number;
}

/** The worker's /metrics figures this scenario reads; undefined when it cannot be read. */
async function scrape(metricsUrl: string): Promise<Scrape | undefined> {
  try {
    const text = await (await fetch(`${metricsUrl}/metrics`)).text();
    return {
      lateness: parseHistogram(text, 'cw_poll_lateness_seconds'),
      submitWindow: parseHistogram(text, 'cw_submit_window_seconds'),
      polls: metricTotal(text, 'cw_polls_total'),
      heapUsed: metricTotal(text, 'nodejs_heap_size_used_bytes'),
    };
  } catch {
    return undefined;
  }
}

/** The submission window's figures (ms) at a scrape. */
function submitWindow(at: Scrape | undefined): InflightResult['submit_window_ms'] {
  const histogram = at?.submitWindow;
  if (histogram === undefined || histogram.count === 0) return null;
  const ms = (q: number) => {
    const seconds = histogramQuantile(histogram.buckets, q);
    return seconds === null ? null : round(seconds * 1_000, 1);
  };
  return {
    count: histogram.count,
    mean: round((histogram.sum / histogram.count) * 1_000, 2),
    p50: ms(0.5),
    p99: ms(0.99),
  };
}

/** p50/p99 (ms) of the lateness histogram's observations between two scrapes. */
function latenessDelta(
  before: Scrape | undefined,
  after: Scrape | undefined,
): InflightResult['poll_lateness_ms']['worker_histogram'] {
  const end = after?.lateness;
  if (end === undefined) return null;
  const start = new Map(before?.lateness?.buckets ?? []);
  const buckets = end.buckets.map(([le, n]): [number, number] => [le, n - (start.get(le) ?? 0)]);
  const count = end.count - (before?.lateness?.count ?? 0);
  if (count <= 0) return null;
  const ms = (q: number) => round((histogramQuantile(buckets, q) ?? NaN) * 1_000, 1);
  const top = Math.max(...buckets.map(([le]) => le).filter(Number.isFinite));
  const beyondTop = count - (buckets.find(([le]) => le === top)?.[1] ?? 0);
  return {
    count,
    p50: ms(0.5),
    p99: ms(0.99),
    beyond_top_bucket: beyondTop,
    top_bucket_ms: top * 1_000,
  };
}

/**
 * N queries all waiting on a slow local service: what holding them costs (worker RSS, Redis
 * memory per query) and how late their polls run, with the default poll schedule.
 */
export async function inflightScenario(
  ctx: BenchContext,
  settings: InflightSettings,
): Promise<InflightResult> {
  const prefix = benchPrefix(ctx, 'inflight');
  const queriesConfig = { debounce_ms: 10, concurrency: settings.concurrency };
  const configPath = writeConfig(ctx, 'inflight', queriesConfig);
  const latency = { minMs: settings.jobLatencyMs, maxMs: settings.jobLatencyMs };
  const simulator = await startBenchSimulator(ctx, latency);
  const config = configFor(configPath, workerEnv(ctx, prefix, simulator.url, 0));
  await clearRedis(ctx.redis, prefix);
  const p = producer(ctx, config);
  try {
    const worker = await startWorker(ctx, 'inflight worker', {
      configPath,
      prefix,
      simulatorUrl: simulator.url,
    });
    const outbound = new Queue(config.delivery.outbound_queue.name, {
      connection: p.context.redis,
      prefix,
    });
    try {
      await p.queue.waitUntilReady();
      const rssIdle = processMemory(worker.proc.pid);
      const memEmpty = await usedMemory(ctx.redis.admin);
      ctx.say(`in flight: preparing ${settings.queries} patients`);
      const patients = await preparePatients(p, settings.queries, 'FLIGHT-MRN');
      const memPatients = await usedMemory(ctx.redis.admin);

      ctx.say(
        `in flight: submitting ${settings.queries} queries (remote jobs take ${settings.jobLatencyMs / 1000} s)`,
      );
      const t0 = Date.now();
      let maxRssSubmitting = 0;
      await scheduleQueries(p, patients);
      await until(
        async () => {
          maxRssSubmitting = Math.max(maxRssSubmitting, processMemory(worker.proc.pid)?.rss ?? 0);
          return (await simulatorStats(simulator)).jobs >= settings.queries;
        },
        {
          everyMs: 200,
          // 100,000 queries take minutes on two cores.
          timeoutMs: Math.max(240_000, settings.queries * 5),
          what: 'every query to be submitted',
        },
      );
      // The remote job id is persisted a few ms after the service answers: let the last ones land.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const submitSeconds = (Date.now() - t0) / 1_000;
      const memInflight = await usedMemory(ctx.redis.admin);
      const rssSubmitted = processMemory(worker.proc.pid);
      const completedAtStart = await outbound.getWaitingCount();
      const before = await scrape(worker.metricsUrl);

      ctx.say(
        `in flight: all submitted after ${submitSeconds.toFixed(1)} s; measuring for ${settings.windowSeconds} s`,
      );
      const lateness: number[] = [];
      const seen = new Set<string>();
      let discarded = 0;
      let maxRss = rssSubmitted?.rss ?? 0;
      let lastRssAt = 0;
      const windowEnd = Date.now() + settings.windowSeconds * 1_000;
      while (Date.now() < windowEnd) {
        const active = await p.queue.getJobs(['active'], 0, 500);
        for (const job of active) {
          const key = `${job.id}@${job.processedOn}`;
          if (seen.has(key) || job.processedOn === undefined) continue;
          const parsed = LegacyQueryJobDataSchema.safeParse(job.data);
          if (
            !parsed.success ||
            parsed.data.step !== 'polling' ||
            parsed.data.nextPollAt === undefined
          )
            continue;
          seen.add(key);
          const late = job.processedOn - parsed.data.nextPollAt;
          // The worker already wrote the next poll's time: this activation's schedule is gone.
          if (late < -50) discarded++;
          else lateness.push(Math.max(0, late));
        }
        if (Date.now() - lastRssAt >= 1_000) {
          lastRssAt = Date.now();
          maxRss = Math.max(maxRss, processMemory(worker.proc.pid)?.rss ?? 0);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const hwm = processMemory(worker.proc.pid)?.peak ?? null;
      const completed = (await outbound.getWaitingCount()) - completedAtStart;

      const after = await scrape(worker.metricsUrl);
      const histogram = latenessDelta(before, after);
      const pollsInWindow =
        before?.polls === undefined || after?.polls === undefined
          ? null
          : after.polls - before.polls;

      const perQuery = (delta: number) =>
        ctx.redis.private ? round(delta / settings.queries, 0) : null;
      const mib = (bytes: number) => round(bytes / MiB, 1) ?? 0;
      return {
        settings: {
          ...settings,
          queries_config: { ...queriesConfig, poll: config.queries.poll },
          setup:
            `simulator in the bench process, every remote job ${settings.jobLatencyMs / 1000} s; one \`concordance-worker work\` child ` +
            `(LOG_LEVEL ${ctx.logLevel}, concurrency ${settings.concurrency}); ${settings.queries} patients with one END002 query each, ` +
            `scheduled from the bench process; the window starts once every query is submitted and lasts ${settings.windowSeconds} s`,
          memory_method:
            'INFO memory used_memory: (all in flight - patients stored) / N = queue job + delayed entry + query state; ' +
            '(all in flight - empty) / N adds the patient record and crosswalk entries (one patient per query). ' +
            'Includes the BullMQ events stream (capped at ~10,000 entries), so small N overstates it',
          lateness_method:
            "sampled: every 100 ms the bench reads the queue's active jobs; for each activation of a polling job, " +
            'processedOn (set by BullMQ when the worker took the job) minus data.nextPollAt (the time the poll was scheduled for); ' +
            'activations whose data already holds the next poll time are discarded. worker_histogram: cw_poll_lateness_seconds ' +
            "from the worker's /metrics, observations within the window (difference of two scrapes; bucketed, so " +
            'interpolated within a bucket; null when the worker does not record it)',
        },
        submit_seconds: round(submitSeconds, 1) ?? 0,
        completed_before_window: completedAtStart,
        worker_rss_mib: {
          idle: rssIdle === undefined ? null : mib(rssIdle.rss),
          max_while_submitting: maxRssSubmitting === 0 ? null : mib(maxRssSubmitting),
          all_submitted: rssSubmitted === undefined ? null : mib(rssSubmitted.rss),
          max_in_window: mib(maxRss),
          peak_hwm: hwm === null ? null : mib(hwm),
        },
        redis: {
          accurate: ctx.redis.private,
          used_memory_mib: {
            empty: mib(memEmpty),
            with_patients: mib(memPatients),
            all_in_flight: mib(memInflight),
          },
          bytes_per_inflight_query: {
            queue_and_state: perQuery(memInflight - memPatients),
            including_patient_record_and_crosswalk: perQuery(memInflight - memEmpty),
          },
        },
        poll_lateness_ms: {
          sampled_active_jobs: { ...summarize(lateness, 1), discarded_advanced: discarded },
          worker_histogram: histogram,
        },
        completed_during_window: completed,
        polls_in_window: pollsInWindow,
        polls_per_s_in_window:
          pollsInWindow === null ? null : round(pollsInWindow / settings.windowSeconds, 0),
        worker_heap_used_mib: after?.heapUsed === undefined ? null : mib(after.heapUsed),
        submit_window_ms: submitWindow(after),
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
}
