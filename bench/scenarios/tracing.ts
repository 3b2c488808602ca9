import { setTimeout as sleep } from 'node:timers/promises';
import {
  benchPrefix,
  writeConfig,
  startBenchSimulator,
  type BenchContext,
} from '../support/fixtures.ts';
import { closedLoopOf, perItem, type ClosedLoopTotals } from '../support/closed-loop.ts';
import { startIngestChild, updateBodyOf, type IngestChild } from '../support/ingest-child.ts';
import {
  startPipelineLine,
  type PipelineLine,
  type PipelineLineResult,
} from '../support/pipeline-line.ts';
import { rawAddLoop, type RawAddResult, type SlicedLoop } from '../support/raw-bullmq.ts';
import { round, summarize } from '../support/stats.ts';
import {
  dropOf,
  interleaveRotating,
  startOtlpSink,
  TRACING_VARIANTS,
  variantEnv,
  variantSetup,
  type SinkCounts,
  type TracingVariant,
} from '../support/tracing-variants.ts';
import { NOOP_LOCK_DURATION_MS, noopScenario, QUERIES_CONFIG } from './pipeline.ts';

export interface TracingSettings {
  /** Interleaved rounds: each gives every variant (and the baseline) one slice. */
  rounds: number;
  /** Pipeline queries per variant per round. */
  queriesPerSlice: number;
  /** No-op BullMQ jobs per round (the pipeline's baseline). */
  noopJobsPerSlice: number;
  /** Pipeline queries per variant before the measured rounds (unmeasured). */
  warmupQueries: number;
  concurrency: number;
  /** Closed-loop ingest seconds per variant (and of raw `add`), split over the rounds. */
  ingestSeconds: number;
  ingestClients: number;
  ingestPatients: number;
  warmupSeconds: number;
}

export const DEFAULT_TRACING: TracingSettings = {
  rounds: 4,
  queriesPerSlice: 750,
  noopJobsPerSlice: 5_000,
  warmupQueries: 250,
  concurrency: 50,
  ingestSeconds: 8,
  ingestClients: 32,
  ingestPatients: 300,
  warmupSeconds: 2,
};

type PerVariant<T> = Record<TracingVariant, T>;
/** (off − on) ÷ off of a variant's ratio, for each variant but the baseline. */
type DropOf = Record<Exclude<TracingVariant, 'off'>, number | null>;

const dropsOf = (ratio: (v: TracingVariant) => number | null): DropOf => ({
  trace_only: dropOf(ratio('off'), ratio('trace_only')),
  recommended: dropOf(ratio('off'), ratio('recommended')),
  full_sampling: dropOf(ratio('off'), ratio('full_sampling')),
});

export interface TracingResult {
  settings: TracingSettings & { variants: PerVariant<string>; setup: string };
  pipeline: {
    variants: PerVariant<PipelineLineResult & { pipeline_ratio: number | null }>;
    bullmq_noop: { jobs: number; seconds: number; jobs_per_s: number | null };
    /** (off − on) ÷ off of `pipeline_ratio`. */
    ratio_drop: DropOf;
  };
  ingest: {
    variants: PerVariant<{
      accepted_per_s: number | null;
      ratio_to_raw_add: number | null;
      p99_ms: number | null;
      cpu_ms_per_update: number | null;
      /** redis-server's CPU (ms) during the variant's slices, per update (null: shared Redis). */
      redis_cpu_ms_per_update: number | null;
      statuses: Record<string, number>;
    }>;
    raw_add: RawAddResult;
    ratio_drop: DropOf;
  };
  /** What the discard OTLP sink received per variant over the scenario (null: none). */
  otlp_received: PerVariant<SinkCounts | null>;
  /** The sink child's CPU over the scenario (ms; its own process, not counted in any figure). */
  otlp_sink_cpu_ms: number | null;
}

const TOKEN = 'bench-tracing-token-0123456789abcdef';

const ratioOf = (a: number | null, b: number | null): number | null =>
  a === null || b === null || b === 0 ? null : round(a / b, 3);

const perVariant = <T>(f: (v: TracingVariant) => T): PerVariant<T> =>
  Object.fromEntries(TRACING_VARIANTS.map((v) => [v, f(v)])) as PerVariant<T>;

/** Runs `fn` for each variant in order (children start one at a time, not all at once). */
async function eachVariant<T>(f: (v: TracingVariant) => Promise<T>): Promise<PerVariant<T>> {
  const out: Partial<PerVariant<T>> = {};
  for (const v of TRACING_VARIANTS) out[v] = await f(v);
  return out as PerVariant<T>;
}

/**
 * What the message trace and OpenTelemetry cost: the pipeline and the closed-loop JSON ingest run
 * in three variants side by side, each with its own worker / ingest child (its own prefix), in
 * interleaved slices with their baselines (no-op BullMQ jobs, raw `add`), so that all see the same
 * machine. Spans go to a discard OTLP/HTTP sink in its own child process.
 */
export async function tracingScenario(
  ctx: BenchContext,
  settings: TracingSettings,
): Promise<TracingResult> {
  const sink = await startOtlpSink(ctx);
  try {
    const pipeline = await pipelinePart(ctx, settings, (v) => variantEnv(v, sink));
    await sleep(500);
    const ingest = await ingestPart(ctx, settings, (v) => variantEnv(v, sink));
    // The batch span processor exports what is left every 5 s (OTEL_BSP_SCHEDULE_DELAY): the
    // children have stopped by now, and a stopping child flushes.
    const counts = await sink.counts();
    return {
      settings: {
        ...settings,
        variants: perVariant(variantSetup),
        setup:
          'pipeline: one `concordance-worker work` child per variant (each its own prefix, patients, ' +
          'config and environment), all running for the whole part; each round schedules ' +
          `${settings.queriesPerSlice} queries for each variant in turn (from the bench process, as the pipeline ` +
          'scenario does) and waits for their results, then runs a fresh no-op BullMQ worker child ' +
          `over ${settings.noopJobsPerSlice} jobs; ingest: one \`concordance-worker ingest\` child per variant, ` +
          `closed loops of ${settings.ingestClients} clients interleaved with raw BullMQ add from the bench ` +
          `process, ${settings.rounds} rounds; OTLP/HTTP JSON to a discard sink child (bench/otlp-sink.ts)`,
      },
      pipeline,
      ingest,
      otlp_received: perVariant((v) => counts[v] ?? null),
      otlp_sink_cpu_ms: sink.cpuMs(),
    };
  } finally {
    await sink.close();
  }
}

async function pipelinePart(
  ctx: BenchContext,
  settings: TracingSettings,
  envOf: (v: TracingVariant) => Record<string, string>,
): Promise<TracingResult['pipeline']> {
  const configPath = writeConfig(ctx, 'tracing', {
    ...QUERIES_CONFIG,
    concurrency: settings.concurrency,
  });
  const simulator = await startBenchSimulator(ctx, { minMs: 0, maxMs: 0 });
  const lines: Partial<PerVariant<PipelineLine>> = {};
  try {
    const perLine = settings.warmupQueries + settings.rounds * settings.queriesPerSlice;
    ctx.say(`tracing: ${TRACING_VARIANTS.length} workers, ${perLine} patients each`);
    for (const v of TRACING_VARIANTS) {
      lines[v] = await startPipelineLine(ctx, {
        name: `tracing ${v} worker`,
        prefix: benchPrefix(ctx, `tracing-${v.replaceAll('_', '-')}`),
        configPath,
        simulatorUrl: simulator.url,
        patients: perLine,
        env: envOf(v),
      });
    }
    const all = TRACING_VARIANTS.map((v) => lines[v] as PipelineLine);
    for (const line of all) await line.run(settings.warmupQueries, true);
    const noop = { jobs: 0, seconds: 0 };
    ctx.say(`tracing: pipeline, ${settings.rounds} rounds`);
    await interleaveRotating(
      all,
      settings.queriesPerSlice * settings.rounds,
      settings.rounds,
      async () => {
        const run = await noopScenario(
          ctx,
          { noopJobs: settings.noopJobsPerSlice, concurrency: settings.concurrency },
          NOOP_LOCK_DURATION_MS,
        );
        noop.jobs += run.jobs;
        noop.seconds += run.seconds;
      },
    );
    const noopPerS = noop.seconds === 0 ? null : round(noop.jobs / noop.seconds, 0);
    const variants = perVariant((v) => {
      const result = (lines[v] as PipelineLine).result();
      return { ...result, pipeline_ratio: ratioOf(result.queries_per_s, noopPerS) };
    });
    return {
      variants,
      bullmq_noop: { ...noop, seconds: round(noop.seconds, 2) ?? 0, jobs_per_s: noopPerS },
      ratio_drop: dropsOf((v) => variants[v].pipeline_ratio),
    };
  } finally {
    for (const v of TRACING_VARIANTS) await lines[v]?.close();
    await simulator.close();
  }
}

async function ingestPart(
  ctx: BenchContext,
  settings: TracingSettings,
  envOf: (v: TracingVariant) => Record<string, string>,
): Promise<TracingResult['ingest']> {
  const children: Partial<PerVariant<IngestChild>> = {};
  let raw: SlicedLoop<RawAddResult> | undefined;
  try {
    const loops = await eachVariant(async (v) => {
      const child = await startIngestChild(ctx, {
        name: `tracing_ingest_${v}`,
        token: TOKEN,
        idPrefix: `TRACE-ING-${v}`,
        count: settings.ingestPatients,
        env: envOf(v),
      });
      children[v] = child;
      let seq = 0;
      const bodyOf = updateBodyOf(child.patients, `trace-${v}`);
      return closedLoopOf(() => child.client.send('POST', '/v1/record-updates', bodyOf(seq++)), {
        clients: settings.ingestClients,
        pids: [child.proc.pid, ctx.redis.pid],
      });
    });
    const anyPatients = (children.off as IngestChild).patients;
    const bodyOf = updateBodyOf(anyPatients, 'trace-raw');
    raw = await rawAddLoop(ctx, {
      prefix: benchPrefix(ctx, 'tracing-raw-add'),
      concurrency: settings.ingestClients,
      jobsPerCall: 1,
      data: (i) => JSON.parse(bodyOf(i)) as object,
    });
    const all: SlicedLoop<unknown>[] = [...TRACING_VARIANTS.map((v) => loops[v]), raw];
    for (const loop of all) await loop.run(settings.warmupSeconds, true);
    ctx.say(
      `tracing: ingest closed loops (${TRACING_VARIANTS.join(', ')}) and raw add, ` +
        `${settings.ingestSeconds} s each in ${settings.rounds} interleaved slices`,
    );
    await interleaveRotating(all, settings.ingestSeconds, settings.rounds);
    const rawAdd = raw.result();
    const variants = perVariant((v) => {
      const t: ClosedLoopTotals = loops[v].result();
      const perS = t.elapsed === 0 ? null : round(t.accepted / t.elapsed, 0);
      return {
        accepted_per_s: perS,
        ratio_to_raw_add: ratioOf(perS, rawAdd.jobs_per_s),
        p99_ms: summarize(t.latencies).p99,
        cpu_ms_per_update: perItem(t.cpuMs[0], t.accepted),
        redis_cpu_ms_per_update: perItem(t.cpuMs[1], t.accepted),
        statuses: t.statuses,
      };
    });
    return {
      variants,
      raw_add: rawAdd,
      ratio_drop: dropsOf((v) => variants[v].ratio_to_raw_add),
    };
  } finally {
    await raw?.close();
    for (const v of TRACING_VARIANTS) await children[v]?.close();
  }
}
