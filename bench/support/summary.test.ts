import { describe, expect, it } from 'vitest';
import { BenchSummarySchema, buildSummary, type SummaryInput } from './summary.ts';

type Histogram = NonNullable<
  NonNullable<SummaryInput['in_flight']>['poll_lateness_ms']['worker_histogram']
>;

function histogram(overrides: Partial<Histogram> = {}): Histogram {
  return {
    count: 40_000,
    p50: 12.5,
    p99: 840,
    beyond_top_bucket: 0,
    top_bucket_ms: 10_000,
    ...overrides,
  };
}

/** A full run's results, as the scenarios report them (only what the summary reads). */
function fullResults(): SummaryInput {
  return {
    pipeline: {
      settings: { queries: 5_000, noopJobs: 30_000 },
      pipeline: { worker_cpu_ms_per_query: 1.84, submission_jobs_per_query: 1.02 },
      bullmq_noop: { worker_cpu_ms_per_job: 0.091 },
      ratio: 0.041,
    },
    in_flight: {
      settings: { queries: 100_000, jobLatencyMs: 600_000, windowSeconds: 60 },
      completed_before_window: 0,
      worker_rss_mib: { max_in_window: 612.4 },
      redis: { bytes_per_inflight_query: { queue_and_state: 3_144 } },
      poll_lateness_ms: {
        sampled_active_jobs: { count: 9_000, p99: 1_250 },
        worker_histogram: histogram(),
      },
    },
    detection: {
      settings: { latencyMs: 60_000, spreadMs: { min: 5_000, max: 60_000 } },
      latency: {
        polls_per_query: { mean: 7.4 },
        lag_p95_fraction_of_nominal: 0.412,
        lag_fraction_of_job_duration_p95: 0.43,
      },
      spread: {
        polls_per_query: { mean: 6.1 },
        lag_p95_fraction_of_nominal: 0.3,
        lag_fraction_of_job_duration_p95: 0.88,
      },
    },
    mllp: { mllp_messages_per_s: 4_757 },
    ingest: {
      settings: { closedLoopSeconds: 10 },
      vs_raw_add: { ratio: 0.214, ingest_p99_ms: 12.6 },
    },
    ingest_batch: { settings: { seconds: 10 }, ratio_to_raw_addbulk: 0.38 },
    tracing: {
      settings: { rounds: 4, queriesPerSlice: 750, ingestSeconds: 8 },
      pipeline: {
        variants: {
          off: { pipeline_ratio: 0.128 },
          trace_only: { pipeline_ratio: 0.125 },
          recommended: { pipeline_ratio: 0.124 },
          full_sampling: { pipeline_ratio: 0.106 },
        },
        ratio_drop: { trace_only: 0.0234, recommended: 0.0313, full_sampling: 0.1719 },
      },
      ingest: {
        variants: {
          off: { ratio_to_raw_add: 0.267 },
          trace_only: { ratio_to_raw_add: 0.262 },
          recommended: { ratio_to_raw_add: 0.259 },
          full_sampling: { ratio_to_raw_add: 0.146 },
        },
        ratio_drop: { trace_only: 0.0187, recommended: 0.03, full_sampling: 0.4532 },
      },
      otlp_received: { full_sampling: { requests: 200, bytes: 9_000_000, spans: 98_673 } },
    },
    bulk_import: {
      bulk_import_ratio: 1.73,
      bulk_import_resources_per_s: 29_054,
      import_peak_rss_mib: 568.2,
      worker_peak_rss_mib: 581.8,
      patients: 100_000,
    },
    cds_hooks: { cds_hooks_p99_ms: 79.8 },
  };
}

describe('buildSummary', () => {
  it('takes each headline figure from its scenario, beside its baseline', () => {
    const summary = buildSummary(fullResults(), { quick: false });
    expect(summary).toEqual({
      quick: false,
      notes: [],
      pipeline_ratio: 0.041,
      worker_cpu_ms_per_query: 1.84,
      noop_worker_cpu_ms_per_job: 0.091,
      submission_jobs_per_query: 1.02,
      inflight_queries: 100_000,
      inflight_worker_rss_mib_max: 612.4,
      inflight_redis_bytes_per_query: 3_144,
      inflight_poll_lateness_p99_s: 0.84,
      polls_per_query: 7.4,
      detection_lag_p95_fraction: 0.412,
      detection_latency_s: 60,
      detection_lag_p95_fraction_spread_5_60: 0.88,
      polls_per_query_spread_5_60: 6.1,
      mllp_messages_per_s: 4_757,
      ingest_ratio_to_raw_add: 0.214,
      ingest_p99_ms: 12.6,
      ingest_batch_ratio_to_raw_addbulk: 0.38,
      trace_otel_pipeline_ratio_drop: 0.0313,
      trace_otel_pipeline_ratio_drop_full_sampling: 0.1719,
      trace_otel_ingest_ratio_drop: 0.03,
      trace_otel_ingest_ratio_drop_full_sampling: 0.4532,
      trace_otel_pipeline_ratio_drop_trace_only: 0.0234,
      trace_otel_ingest_ratio_drop_trace_only: 0.0187,
      trace_otel_pipeline_ratio_off: 0.128,
      trace_otel_pipeline_ratio_trace_only: 0.125,
      trace_otel_pipeline_ratio_recommended: 0.124,
      trace_otel_pipeline_ratio_full_sampling: 0.106,
      trace_otel_ingest_ratio_off: 0.267,
      trace_otel_ingest_ratio_trace_only: 0.262,
      trace_otel_ingest_ratio_recommended: 0.259,
      trace_otel_ingest_ratio_full_sampling: 0.146,
      trace_otel_spans_received_full_sampling: 98_673,
      bulk_import_ratio: 1.73,
      bulk_import_resources_per_s: 29_054,
      bulk_import_peak_rss_mib: 568.2,
      bulk_import_worker_peak_rss_mib: 581.8,
      bulk_import_patients: 100_000,
      cds_hooks_p99_ms: 79.8,
    });
    expect(BenchSummarySchema.parse(summary)).toEqual(summary);
  });

  it('marks a quick run and says which sizes it used', () => {
    const results = fullResults();
    if (!results.pipeline || !results.in_flight || !results.detection) throw new Error('fixture');
    results.pipeline.settings = { queries: 500, noopJobs: 5_000 };
    results.in_flight.settings = { queries: 1_000, jobLatencyMs: 20_000, windowSeconds: 10 };
    results.detection.settings = { latencyMs: 6_000, spreadMs: { min: 1_000, max: 8_000 } };
    if (!results.ingest || !results.ingest_batch) throw new Error('fixture');
    results.ingest.settings = { closedLoopSeconds: 3 };
    results.ingest_batch.settings = { seconds: 3 };
    const summary = buildSummary(results, { quick: true });
    expect(summary.quick).toBe(true);
    expect(summary.inflight_queries).toBe(1_000);
    expect(summary.detection_latency_s).toBe(6);
    expect(summary.notes).toEqual([
      'quick run (--quick): smaller counts and shorter latencies; not comparable with a full run',
      'ingest: 3 s per loop (raw add included)',
      'ingest_batch: 3 s each (batch, raw addBulk)',
      'pipeline: 500 queries, 5000 no-op jobs',
      'tracing: 4 rounds of 750 queries per variant, ingest 8 s per variant',
      'in flight: 1000 queries (full run 100000), remote jobs 20 s, window 10 s',
      'detection: L = 6 s (full run 60 s)',
      'detection: the *_spread_5_60 figures are for jobs of 1-8 s',
    ]);
    expect(summary.ingest_ratio_to_raw_add).toBe(0.214);
    expect(summary.ingest_batch_ratio_to_raw_addbulk).toBe(0.38);
  });

  it('leaves the figures of scenarios that did not run null and names them', () => {
    const { mllp } = fullResults();
    const summary = buildSummary({ mllp }, { quick: false });
    expect(summary.mllp_messages_per_s).toBe(4_757);
    for (const key of [
      'pipeline_ratio',
      'worker_cpu_ms_per_query',
      'noop_worker_cpu_ms_per_job',
      'submission_jobs_per_query',
      'inflight_queries',
      'inflight_worker_rss_mib_max',
      'inflight_redis_bytes_per_query',
      'inflight_poll_lateness_p99_s',
      'polls_per_query',
      'detection_lag_p95_fraction',
      'detection_latency_s',
      'detection_lag_p95_fraction_spread_5_60',
      'polls_per_query_spread_5_60',
      'ingest_ratio_to_raw_add',
      'ingest_p99_ms',
      'ingest_batch_ratio_to_raw_addbulk',
      'trace_otel_pipeline_ratio_drop',
      'trace_otel_ingest_ratio_drop',
      'trace_otel_pipeline_ratio_drop_full_sampling',
      'trace_otel_ingest_ratio_drop_full_sampling',
      'trace_otel_spans_received_full_sampling',
      'bulk_import_ratio',
      'bulk_import_peak_rss_mib',
      'cds_hooks_p99_ms',
    ] as const) {
      expect(summary[key], key).toBeNull();
    }
    expect(summary.notes).toContain(
      'not run, their figures are null: pipeline, in_flight, detection, ingest, ingest_batch, tracing, bulk_import, cds_hooks',
    );
  });

  it('says when the OpenTelemetry variants exported no span (the message trace measured alone)', () => {
    const results = fullResults();
    if (!results.tracing) throw new Error('fixture');
    results.tracing.otlp_received = { full_sampling: null };
    const summary = buildSummary(results, { quick: false });
    expect(summary.trace_otel_spans_received_full_sampling).toBe(0);
    expect(summary.notes).toEqual([
      'tracing: the OTLP sink received no span: the OpenTelemetry variants measured the message trace (and the tracing foundation) only',
    ]);
  });

  it("takes poll lateness from the bench's samples when the histogram's p99 is only a floor", () => {
    const results = fullResults();
    if (!results.in_flight) throw new Error('fixture');
    results.in_flight.poll_lateness_ms.worker_histogram = histogram({
      p99: 10_000,
      beyond_top_bucket: 2_000,
    });
    const summary = buildSummary(results, { quick: false });
    expect(summary.inflight_poll_lateness_p99_s).toBe(1.25);
    expect(summary.notes).toContain(
      'inflight_poll_lateness_p99_s: 2000 of 40000 observations of cw_poll_lateness_seconds lie ' +
        "beyond its top bucket (10 s); taken from the bench's 9000 sampled activations",
    );
  });

  it('keeps the histogram when no more than 1 % of it lies beyond the top bucket', () => {
    const results = fullResults();
    if (!results.in_flight) throw new Error('fixture');
    results.in_flight.poll_lateness_ms.worker_histogram = histogram({ beyond_top_bucket: 400 });
    expect(buildSummary(results, { quick: false }).inflight_poll_lateness_p99_s).toBe(0.84);
  });

  it('falls back to the samples when the worker recorded no lateness', () => {
    const results = fullResults();
    if (!results.in_flight) throw new Error('fixture');
    results.in_flight.poll_lateness_ms.worker_histogram = null;
    const summary = buildSummary(results, { quick: false });
    expect(summary.inflight_poll_lateness_p99_s).toBe(1.25);
    expect(summary.notes).toContain(
      'inflight_poll_lateness_p99_s: no cw_poll_lateness_seconds observation in the window; ' +
        "taken from the bench's 9000 sampled activations",
    );
  });

  it('notes queries that ended before the in-flight window', () => {
    const results = fullResults();
    if (!results.in_flight) throw new Error('fixture');
    results.in_flight.completed_before_window = 250;
    expect(buildSummary(results, { quick: false }).notes).toContain(
      'in flight: 250 queries had ended before the window began',
    );
  });

  it('takes the ingest figures from ingest.vs_raw_add and ingest_batch', () => {
    const results = fullResults();
    if (!results.ingest || !results.ingest_batch) throw new Error('fixture');
    results.ingest.vs_raw_add = { ratio: 0.35, ingest_p99_ms: 9.4 };
    results.ingest_batch.ratio_to_raw_addbulk = 0.52;
    const summary = buildSummary(results, { quick: false });
    expect(summary).toMatchObject({
      ingest_ratio_to_raw_add: 0.35,
      ingest_p99_ms: 9.4,
      ingest_batch_ratio_to_raw_addbulk: 0.52,
    });
    // A ratio that could not be computed (no raw add measured) stays null, with no other note.
    results.ingest.vs_raw_add = { ratio: null, ingest_p99_ms: 9.4 };
    const partial = buildSummary(results, { quick: false });
    expect(partial.ingest_ratio_to_raw_add).toBeNull();
    expect(partial.notes).toEqual([]);
  });

  it('reports a figure that is not a finite number as null, with a note', () => {
    const results = fullResults();
    if (!results.pipeline) throw new Error('fixture');
    results.pipeline.ratio = Number.NaN;
    const summary = buildSummary(results, { quick: false });
    expect(summary.pipeline_ratio).toBeNull();
    expect(summary.notes).toContain('pipeline_ratio: not a finite number (NaN), reported as null');
  });
});
