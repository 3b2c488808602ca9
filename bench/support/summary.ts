import { z } from 'zod';
import type { DetectionLine, DetectionResult } from '../scenarios/detection.ts';
import type { InflightResult } from '../scenarios/inflight.ts';
import type { IngestResult } from '../scenarios/ingest.ts';
import type { IngestBatchResult } from '../scenarios/ingest-batch.ts';
import type { MllpResult } from '../scenarios/mllp.ts';
import type { PipelineResult } from '../scenarios/pipeline.ts';
import type { TracingResult } from '../scenarios/tracing.ts';
import type { BulkImportResult } from '../scenarios/bulk-import.ts';
import type { CdsHooksResult } from '../scenarios/cds-hooks.ts';
import { round } from './stats.ts';

/** A figure of the summary: null when its scenario did not run or the figure could not be read. */
const figure = z.number().nullable();

/**
 * The headline figures of one bench run (`summary` in the JSON), each measured in the same run as
 * its baseline. A quick run (`--quick`) uses smaller counts: `quick` is true and `notes` says what
 * differs, so its figures are not comparable with a full run's.
 */
export const BenchSummarySchema = z.object({
  /** True for `--quick` (smaller counts, shorter latencies; see `notes`). */
  quick: z.boolean(),
  /** What the figures need to be read with: quick-run sizes, scenarios not run, bounds. */
  notes: z.array(z.string()),
  /**
   * Pipeline queries completed per second ÷ bare BullMQ no-op jobs per second (ratio, no unit);
   * baseline: the no-op worker child on the same Redis, same concurrency, same run.
   */
  pipeline_ratio: figure,
  /**
   * CPU (user + system, ms) of the worker child during the pipeline run ÷ queries completed;
   * baseline: `noop_worker_cpu_ms_per_job`.
   */
  worker_cpu_ms_per_query: figure,
  /**
   * CPU (user + system, ms) of the no-op BullMQ worker child during its run ÷ jobs; the baseline of
   * `worker_cpu_ms_per_query` (a query is two job activations and two HTTP calls).
   */
  noop_worker_cpu_ms_per_job: figure,
  /**
   * Jobs of the `concordance-queries` queue finished (completed or failed) per query in the
   * pipeline run (BullMQ's metrics); expected: 1, plus one per follow-up.
   */
  submission_jobs_per_query: figure,
  /** Queries held in flight by the in-flight scenario (count; 100,000 in a full run). */
  inflight_queries: figure,
  /**
   * The worker child's largest RSS (MiB) sampled through the in-flight window, every query in
   * flight; baseline: `in_flight.worker_rss_mib.idle` (the same worker before any query).
   */
  inflight_worker_rss_mib_max: figure,
  /**
   * Redis `used_memory` (bytes) with every query in flight minus with only the patients stored,
   * ÷ queries: queue job, delayed entry and query state per query. Null with a shared Redis.
   */
  inflight_redis_bytes_per_query: figure,
  /**
   * p99 of how late polls ran (s: actual minus scheduled time) during the in-flight window, from the
   * worker's `cw_poll_lateness_seconds`; from the bench's sampling of active jobs when the histogram
   * is missing or over 1 % of its observations lie beyond its top bucket (see `notes`). Baseline: 0.
   */
  inflight_poll_lateness_p99_s: figure,
  /**
   * Status GETs per query (mean, simulator count) for remote jobs of L ± 20 %, measured after a
   * learning batch; baseline: 1 (a poll exactly at the job's end).
   */
  polls_per_query: figure,
  /**
   * p95 of the detection lag (the first GET that found the job finished minus its end) ÷ L, jobs of
   * L ± 20 %, after a learning batch (ratio); baseline: 0.
   */
  detection_lag_p95_fraction: figure,
  /** L, the remote job latency of the detection scenario (s; 60 in a full run). */
  detection_latency_s: figure,
  /**
   * As `detection_lag_p95_fraction` for jobs spread uniformly over 5-60 s, each job's lag divided by
   * its own duration before taking the p95 (ratio); baseline: 0.
   */
  detection_lag_p95_fraction_spread_5_60: figure,
  /** As `polls_per_query` for jobs spread uniformly over 5-60 s; baseline: 1. */
  polls_per_query_spread_5_60: figure,
  /** HL7 v2 messages acknowledged AA per second over MLLP (closed loop, 32 connections). */
  mllp_messages_per_s: figure,
  /**
   * Ingest updates accepted per second ÷ raw BullMQ `add` per second at the same concurrency
   * (`ingest.vs_raw_add.ratio`; ratio).
   */
  ingest_ratio_to_raw_add: figure,
  /**
   * Ingest request latency p99 (ms) in the `ingest.vs_raw_add` run, at its concurrency
   * (`ingest.vs_raw_add.ingest_p99_ms`); its rate's baseline is raw `add` in the same run.
   */
  ingest_p99_ms: figure,
  /**
   * Batch ingest updates per second ÷ raw BullMQ `addBulk` per second
   * (`ingest_batch.ratio_to_raw_addbulk`; ratio).
   */
  ingest_batch_ratio_to_raw_addbulk: figure,
  /**
   * The `tracing` scenario: (off − on) ÷ off of the pipeline ratio (queries/s ÷ no-op jobs/s, same
   * run) with the message trace on and OpenTelemetry exporting at the recommended sampling
   * (parentbased_traceidratio 0.1) against both off (fraction; target ≤ 0.05).
   */
  trace_otel_pipeline_ratio_drop: figure,
  /** As `trace_otel_pipeline_ratio_drop` with every span sampled (always_on; fraction). */
  trace_otel_pipeline_ratio_drop_full_sampling: figure,
  /** As `trace_otel_pipeline_ratio_drop` for the ingest ratio (updates/s ÷ raw `add`/s; target ≤ 0.05). */
  trace_otel_ingest_ratio_drop: figure,
  /** As `trace_otel_ingest_ratio_drop` with every span sampled (always_on; fraction). */
  trace_otel_ingest_ratio_drop_full_sampling: figure,
  /** As `trace_otel_pipeline_ratio_drop` with the message trace alone (OpenTelemetry off). */
  trace_otel_pipeline_ratio_drop_trace_only: figure,
  /** As `trace_otel_ingest_ratio_drop` with the message trace alone (OpenTelemetry off). */
  trace_otel_ingest_ratio_drop_trace_only: figure,
  /**
   * The pipeline ratio of each variant of the `tracing` scenario: both off, the message trace
   * alone, both on at the recommended sampling, both on at full sampling.
   */
  trace_otel_pipeline_ratio_off: figure,
  trace_otel_pipeline_ratio_trace_only: figure,
  trace_otel_pipeline_ratio_recommended: figure,
  trace_otel_pipeline_ratio_full_sampling: figure,
  /** The ingest ratio (÷ raw `add`) of each variant of the `tracing` scenario. */
  trace_otel_ingest_ratio_off: figure,
  trace_otel_ingest_ratio_trace_only: figure,
  trace_otel_ingest_ratio_recommended: figure,
  trace_otel_ingest_ratio_full_sampling: figure,
  /**
   * Spans the discard OTLP sink received from the full-sampling variant's children (count); 0 means
   * no span was exported, so the OpenTelemetry variants measured the message trace only.
   */
  trace_otel_spans_received_full_sampling: figure,
  /**
   * The `bulk_import` scenario: resources read per second by `import bulk-fhir` from NDJSON ÷ the
   * batch route's updates per second in the same run (ratio; target ≥ 0.5).
   */
  bulk_import_ratio: figure,
  bulk_import_resources_per_s: figure,
  /** Peak RSS (VmHWM) of the import process, and of a worker running its paced queries (MiB; ≤ 300). */
  bulk_import_peak_rss_mib: figure,
  bulk_import_worker_peak_rss_mib: figure,
  /** Patients the `bulk_import` scenario imported (the targets are for 100,000). */
  bulk_import_patients: figure,
  /** The `cds_hooks` scenario: p99 of `patient-view` calls, 50 in flight (ms; target ≤ 500). */
  cds_hooks_p99_ms: figure,
});
export type BenchSummary = z.infer<typeof BenchSummarySchema>;

/** The parts of the run's results the summary reads (the bench's results object is one). */
export interface SummaryInput {
  pipeline?: {
    settings: Pick<PipelineResult['settings'], 'queries' | 'noopJobs'>;
    pipeline: Pick<
      PipelineResult['pipeline'],
      'worker_cpu_ms_per_query' | 'submission_jobs_per_query'
    >;
    bullmq_noop: Pick<PipelineResult['bullmq_noop'], 'worker_cpu_ms_per_job'>;
    ratio: number | null;
  };
  in_flight?: {
    settings: Pick<InflightResult['settings'], 'queries' | 'jobLatencyMs' | 'windowSeconds'>;
    completed_before_window: number;
    worker_rss_mib: Pick<InflightResult['worker_rss_mib'], 'max_in_window'>;
    redis: { bytes_per_inflight_query: { queue_and_state: number | null } };
    poll_lateness_ms: {
      sampled_active_jobs: { count: number; p99: number | null };
      worker_histogram: InflightResult['poll_lateness_ms']['worker_histogram'];
    };
  };
  detection?: {
    settings: Pick<DetectionResult['settings'], 'latencyMs' | 'spreadMs'>;
    latency: DetectionLineFigures;
    spread: DetectionLineFigures;
  };
  mllp?: Pick<MllpResult, 'mllp_messages_per_s'>;
  ingest?: {
    settings: Pick<IngestResult['settings'], 'closedLoopSeconds'>;
    vs_raw_add: Pick<IngestResult['vs_raw_add'], 'ratio' | 'ingest_p99_ms'>;
  };
  ingest_batch?: {
    settings: Pick<IngestBatchResult['settings'], 'seconds'>;
    ratio_to_raw_addbulk: IngestBatchResult['ratio_to_raw_addbulk'];
  };
  tracing?: {
    settings: Pick<TracingResult['settings'], 'rounds' | 'queriesPerSlice' | 'ingestSeconds'>;
    pipeline: Pick<TracingResult['pipeline'], 'ratio_drop'> & {
      variants: Record<
        keyof TracingResult['pipeline']['variants'],
        { pipeline_ratio: number | null }
      >;
    };
    ingest: Pick<TracingResult['ingest'], 'ratio_drop'> & {
      variants: Record<
        keyof TracingResult['ingest']['variants'],
        { ratio_to_raw_add: number | null }
      >;
    };
    otlp_received: Pick<TracingResult['otlp_received'], 'full_sampling'>;
  };
  bulk_import?: Pick<
    BulkImportResult,
    | 'bulk_import_ratio'
    | 'bulk_import_resources_per_s'
    | 'import_peak_rss_mib'
    | 'worker_peak_rss_mib'
    | 'patients'
  >;
  cds_hooks?: Pick<CdsHooksResult, 'cds_hooks_p99_ms'>;
}

type DetectionLineFigures = Pick<
  DetectionLine,
  'lag_p95_fraction_of_nominal' | 'lag_fraction_of_job_duration_p95'
> & { polls_per_query: { mean: number | null } };

/** What the run was: `--quick` or not. */
export interface SummaryRun {
  quick: boolean;
}

const FULL_INFLIGHT_QUERIES = 100_000;
const FULL_DETECTION_LATENCY_MS = 60_000;
/** Above this share of observations beyond the top bucket, the histogram's p99 is only a floor. */
const BEYOND_TOP_BUCKET_SHARE = 0.01;

/** p99 poll lateness (s) of the in-flight window, and a note when it is not the histogram's. */
function pollLatenessP99(lateness: NonNullable<SummaryInput['in_flight']>['poll_lateness_ms']): {
  seconds: number | null;
  note?: string;
} {
  const histogram = lateness.worker_histogram;
  const sampled = lateness.sampled_active_jobs;
  const fromSamples = (why: string) => ({
    seconds: sampled.p99 === null ? null : round(sampled.p99 / 1_000, 3),
    note: `inflight_poll_lateness_p99_s: ${why}; taken from the bench's ${sampled.count} sampled activations`,
  });
  if (histogram === null || histogram.p99 === null)
    return fromSamples('no cw_poll_lateness_seconds observation in the window');
  if (histogram.beyond_top_bucket > histogram.count * BEYOND_TOP_BUCKET_SHARE)
    return fromSamples(
      `${histogram.beyond_top_bucket} of ${histogram.count} observations of cw_poll_lateness_seconds ` +
        `lie beyond its top bucket (${histogram.top_bucket_ms / 1_000} s)`,
    );
  return { seconds: round(histogram.p99 / 1_000, 3) };
}

/** The notes of a quick run: what it ran with instead of the full run's sizes. */
function quickNotes(results: SummaryInput): string[] {
  const notes = [
    'quick run (--quick): smaller counts and shorter latencies; not comparable with a full run',
  ];
  const { pipeline, in_flight: inflight, detection, ingest, ingest_batch: batch } = results;
  if (ingest)
    notes.push(`ingest: ${ingest.settings.closedLoopSeconds} s per loop (raw add included)`);
  if (batch) notes.push(`ingest_batch: ${batch.settings.seconds} s each (batch, raw addBulk)`);
  if (pipeline)
    notes.push(
      `pipeline: ${pipeline.settings.queries} queries, ${pipeline.settings.noopJobs} no-op jobs`,
    );
  if (results.tracing) {
    const t = results.tracing.settings;
    notes.push(
      `tracing: ${t.rounds} rounds of ${t.queriesPerSlice} queries per variant, ingest ${t.ingestSeconds} s per variant`,
    );
  }
  if (inflight && inflight.settings.queries !== FULL_INFLIGHT_QUERIES)
    notes.push(
      `in flight: ${inflight.settings.queries} queries (full run ${FULL_INFLIGHT_QUERIES}), remote jobs ` +
        `${inflight.settings.jobLatencyMs / 1_000} s, window ${inflight.settings.windowSeconds} s`,
    );
  if (detection) {
    const { latencyMs, spreadMs } = detection.settings;
    if (latencyMs !== FULL_DETECTION_LATENCY_MS)
      notes.push(
        `detection: L = ${latencyMs / 1_000} s (full run ${FULL_DETECTION_LATENCY_MS / 1_000} s)`,
      );
    if (spreadMs.min !== 5_000 || spreadMs.max !== 60_000)
      notes.push(
        `detection: the *_spread_5_60 figures are for jobs of ${spreadMs.min / 1_000}-${spreadMs.max / 1_000} s`,
      );
  }
  return notes;
}

/** The summary of a run from its results (validated against {@link BenchSummarySchema}). */
export function buildSummary(results: SummaryInput, run: SummaryRun): BenchSummary {
  const notes = run.quick ? quickNotes(results) : [];
  const missing = (
    [
      'pipeline',
      'in_flight',
      'detection',
      'mllp',
      'ingest',
      'ingest_batch',
      'tracing',
      'bulk_import',
      'cds_hooks',
    ] as const
  ).filter((scenario) => results[scenario] === undefined);
  if (missing.length > 0) notes.push(`not run, their figures are null: ${missing.join(', ')}`);

  const { pipeline, in_flight: inflight, detection, mllp, ingest, tracing } = results;
  if (tracing && (tracing.otlp_received.full_sampling?.spans ?? 0) === 0)
    notes.push(
      'tracing: the OTLP sink received no span: the OpenTelemetry variants measured the message trace (and the tracing foundation) only',
    );
  const lateness = inflight ? pollLatenessP99(inflight.poll_lateness_ms) : { seconds: null };
  if (lateness.note !== undefined) notes.push(lateness.note);
  if (inflight && inflight.completed_before_window > 0)
    notes.push(
      `in flight: ${inflight.completed_before_window} queries had ended before the window began`,
    );

  const figures: Record<string, number | null> = {
    pipeline_ratio: pipeline?.ratio ?? null,
    worker_cpu_ms_per_query: pipeline?.pipeline.worker_cpu_ms_per_query ?? null,
    noop_worker_cpu_ms_per_job: pipeline?.bullmq_noop.worker_cpu_ms_per_job ?? null,
    submission_jobs_per_query: pipeline?.pipeline.submission_jobs_per_query ?? null,
    inflight_queries: inflight?.settings.queries ?? null,
    inflight_worker_rss_mib_max: inflight?.worker_rss_mib.max_in_window ?? null,
    inflight_redis_bytes_per_query:
      inflight?.redis.bytes_per_inflight_query.queue_and_state ?? null,
    inflight_poll_lateness_p99_s: lateness.seconds,
    polls_per_query: detection?.latency.polls_per_query.mean ?? null,
    detection_lag_p95_fraction: detection?.latency.lag_p95_fraction_of_nominal ?? null,
    detection_latency_s: detection ? detection.settings.latencyMs / 1_000 : null,
    detection_lag_p95_fraction_spread_5_60:
      detection?.spread.lag_fraction_of_job_duration_p95 ?? null,
    polls_per_query_spread_5_60: detection?.spread.polls_per_query.mean ?? null,
    mllp_messages_per_s: mllp?.mllp_messages_per_s ?? null,
    ingest_ratio_to_raw_add: ingest?.vs_raw_add.ratio ?? null,
    ingest_p99_ms: ingest?.vs_raw_add.ingest_p99_ms ?? null,
    ingest_batch_ratio_to_raw_addbulk: results.ingest_batch?.ratio_to_raw_addbulk ?? null,
    trace_otel_pipeline_ratio_drop: tracing?.pipeline.ratio_drop.recommended ?? null,
    trace_otel_pipeline_ratio_drop_full_sampling:
      tracing?.pipeline.ratio_drop.full_sampling ?? null,
    trace_otel_ingest_ratio_drop: tracing?.ingest.ratio_drop.recommended ?? null,
    trace_otel_ingest_ratio_drop_full_sampling: tracing?.ingest.ratio_drop.full_sampling ?? null,
    trace_otel_pipeline_ratio_drop_trace_only: tracing?.pipeline.ratio_drop.trace_only ?? null,
    trace_otel_ingest_ratio_drop_trace_only: tracing?.ingest.ratio_drop.trace_only ?? null,
    trace_otel_pipeline_ratio_off: tracing?.pipeline.variants.off.pipeline_ratio ?? null,
    trace_otel_pipeline_ratio_trace_only:
      tracing?.pipeline.variants.trace_only.pipeline_ratio ?? null,
    trace_otel_pipeline_ratio_recommended:
      tracing?.pipeline.variants.recommended.pipeline_ratio ?? null,
    trace_otel_pipeline_ratio_full_sampling:
      tracing?.pipeline.variants.full_sampling.pipeline_ratio ?? null,
    trace_otel_ingest_ratio_off: tracing?.ingest.variants.off.ratio_to_raw_add ?? null,
    trace_otel_ingest_ratio_trace_only:
      tracing?.ingest.variants.trace_only.ratio_to_raw_add ?? null,
    trace_otel_ingest_ratio_recommended:
      tracing?.ingest.variants.recommended.ratio_to_raw_add ?? null,
    trace_otel_ingest_ratio_full_sampling:
      tracing?.ingest.variants.full_sampling.ratio_to_raw_add ?? null,
    trace_otel_spans_received_full_sampling: tracing
      ? (tracing.otlp_received.full_sampling?.spans ?? 0)
      : null,
    bulk_import_ratio: results.bulk_import?.bulk_import_ratio ?? null,
    bulk_import_resources_per_s: results.bulk_import?.bulk_import_resources_per_s ?? null,
    bulk_import_peak_rss_mib: results.bulk_import?.import_peak_rss_mib ?? null,
    bulk_import_worker_peak_rss_mib: results.bulk_import?.worker_peak_rss_mib ?? null,
    bulk_import_patients: results.bulk_import?.patients ?? null,
    cds_hooks_p99_ms: results.cds_hooks?.cds_hooks_p99_ms ?? null,
  };
  // A figure that came out NaN or infinite is reported as null rather than failing the whole run.
  for (const [key, value] of Object.entries(figures)) {
    if (value !== null && !Number.isFinite(value)) {
      notes.push(`${key}: not a finite number (${value}), reported as null`);
      figures[key] = null;
    }
  }
  return BenchSummarySchema.parse({ quick: run.quick, notes, ...figures });
}
