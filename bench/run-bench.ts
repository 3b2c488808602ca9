/**
 * `npm run bench`: ingest, pipeline, in-flight, polling-cost and detection figures of
 * concordance-worker on this machine. Progress, a readable table and the summary go to stderr;
 * stdout gets exactly one line, the JSON document (also written to bench-output/bench.json), with
 * the headline figures in its `summary`, so `npm run -s bench | jq .summary` works.
 *
 *   node bench/run-bench.ts [--only ingest,ingest_batch,pipeline,inflight,polling] [--inflight N] [--quick] ...
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { generateCrosswalkSecret } from '../src/identity/crosswalk-keys.ts';
import {
  bulkImportScenario,
  DEFAULT_BULK_IMPORT,
  type BulkImportResult,
} from './scenarios/bulk-import.ts';
import { cdsHooksScenario, DEFAULT_CDS_HOOKS, type CdsHooksResult } from './scenarios/cds-hooks.ts';
import { clusterScenario, DEFAULT_CLUSTER, type ClusterResult } from './scenarios/cluster.ts';
import {
  DEFAULT_DETECTION,
  detectionScenario,
  type DetectionResult,
} from './scenarios/detection.ts';
import { DEFAULT_INFLIGHT, inflightScenario, type InflightResult } from './scenarios/inflight.ts';
import { DEFAULT_INGEST, ingestScenario, type IngestResult } from './scenarios/ingest.ts';
import {
  DEFAULT_INGEST_BATCH,
  ingestBatchScenario,
  type IngestBatchResult,
} from './scenarios/ingest-batch.ts';
import { DEFAULT_MLLP, mllpScenario, type MllpResult } from './scenarios/mllp.ts';
import { DEFAULT_PIPELINE, pipelineScenario, type PipelineResult } from './scenarios/pipeline.ts';
import {
  DEFAULT_POLLING_COST,
  pollingCostScenario,
  type PollingCostResult,
} from './scenarios/polling-cost.ts';
import { DEFAULT_TRACING, tracingScenario, type TracingResult } from './scenarios/tracing.ts';
import { cdsHooksRows } from './support/cds-table.ts';
import type { BenchContext } from './support/fixtures.ts';
import { benchRedis, Cleanup, clearRedis } from './support/processes.ts';
import { buildSummary } from './support/summary.ts';
import { fmt, renderTable, type TableRow } from './support/table.ts';

const SCENARIOS = [
  'ingest',
  'ingest_batch',
  'mllp',
  'pipeline',
  'inflight',
  'polling',
  'detection',
  'cluster',
  'tracing',
  'bulk_import',
  'cds_hooks',
] as const;
type Scenario = (typeof SCENARIOS)[number];

const USAGE = `usage: node bench/run-bench.ts [options]
  --only LIST            scenarios to run, comma-separated: ${SCENARIOS.join(',')} (default: all)
  --inflight N           queries held in flight (default ${DEFAULT_INFLIGHT.queries})
  --inflight-window S    seconds measured once all are submitted (default ${DEFAULT_INFLIGHT.windowSeconds})
  --pipeline N           queries through the zero-latency pipeline (default ${DEFAULT_PIPELINE.queries})
  --noop N               no-op BullMQ jobs of the baseline (default ${DEFAULT_PIPELINE.noopJobs})
  --concurrency N        worker concurrency, pipeline/no-op/in-flight (default ${DEFAULT_PIPELINE.concurrency})
  --ingest-rate N        open-loop offered load per second (default ${DEFAULT_INGEST.openLoopRate})
  --ingest-seconds S     length of the open and the closed loop (default ${DEFAULT_INGEST.openLoopSeconds})
  --ingest-clients N     closed-loop concurrent clients (default ${DEFAULT_INGEST.closedLoopClients})
  --batch-size N         updates per batch request and jobs per raw addBulk (default ${DEFAULT_INGEST_BATCH.batchSize})
  --batch-concurrency N  batch requests and addBulk calls in flight (default ${DEFAULT_INGEST_BATCH.concurrency})
  --batch-seconds S      length of the batch run and of its addBulk baseline (default ${DEFAULT_INGEST_BATCH.seconds})
  --mllp-connections N   MLLP connections sending back to back (default ${DEFAULT_MLLP.connections})
  --mllp-seconds S       length of the MLLP run (default ${DEFAULT_MLLP.seconds})
  --polling N            queries per poll schedule in the polling-cost scenario (default ${DEFAULT_POLLING_COST.queries})
  --detection-latency S  L, the remote job latency of the detection scenario's first line (default ${DEFAULT_DETECTION.latencyMs / 1000})
  --detection N          measured queries per detection line (default ${DEFAULT_DETECTION.measuredQueries})
  --detection-learning N learning queries run first per detection line (default ${DEFAULT_DETECTION.learningQueries})
  --cluster N            queries per run of the cluster scenario (default ${DEFAULT_CLUSTER.queries})
  --cluster-concurrency N  worker concurrency of each cluster-scenario run, split over its partitions (default ${DEFAULT_CLUSTER.concurrency})
  --tracing-rounds N     interleaved rounds of the tracing scenario (default ${DEFAULT_TRACING.rounds})
  --tracing-queries N    pipeline queries per variant per round (default ${DEFAULT_TRACING.queriesPerSlice})
  --tracing-seconds S    closed-loop ingest seconds per variant, over all rounds (default ${DEFAULT_TRACING.ingestSeconds})
  --bulk-patients N      patients of the bulk_import scenario's NDJSON export, 9 resources each (default ${DEFAULT_BULK_IMPORT.patients})
  --bulk-skip-paced      bulk_import: skip the second, paced import with a worker (its worker RSS)
  --cds-clients N        cds_hooks: concurrent patient-view calls (default ${DEFAULT_CDS_HOOKS.clients})
  --cds-seconds S        cds_hooks: length of the measured run (default ${DEFAULT_CDS_HOOKS.seconds})
  --quick                small sizes everywhere (a smoke run of about a minute)
  --shared-redis         use REDIS_URL even when redis-server is installed
  --log-level LEVEL      LOG_LEVEL of the child processes (default warn)
  --out FILE             where the JSON goes too (default bench-output/bench.json)`;

function intOption(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--${name} needs a whole number >= 1, got ${value}`);
  return n;
}

function packageVersion(name: string): string {
  try {
    const path = new URL(`../node_modules/${name}/package.json`, import.meta.url);
    return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

interface Results {
  ingest?: IngestResult;
  ingest_batch?: IngestBatchResult;
  mllp?: MllpResult;
  pipeline?: PipelineResult;
  in_flight?: InflightResult;
  polling_cost?: PollingCostResult;
  detection?: DetectionResult;
  cluster?: ClusterResult;
  tracing?: TracingResult;
  bulk_import?: BulkImportResult;
  cds_hooks?: CdsHooksResult;
}

function tracingRows(t: TracingResult): TableRow[] {
  const pct = (d: number | null) => (d === null ? 'n/a' : `${fmt(d * 100, 1)} %`);
  const all = <T>(f: (v: keyof TracingResult['pipeline']['variants']) => T) =>
    (['off', 'trace_only', 'recommended', 'full_sampling'] as const).map(f).join(' / ');
  const p = t.pipeline.variants;
  const i = t.ingest.variants;
  const order = 'off / trace only / recommended / full';
  return [
    {
      scenario: 'tracing',
      figure: 'pipeline ratio',
      value: all((v) => fmt(p[v].pipeline_ratio, 3)),
      setup: `${order}: queries/s ${all((v) => fmt(p[v].queries_per_s))} ÷ no-op ${fmt(t.pipeline.bullmq_noop.jobs_per_s)}/s`,
    },
    {
      scenario: 'tracing',
      figure: 'pipeline drop',
      value: (['trace_only', 'recommended', 'full_sampling'] as const)
        .map((v) => pct(t.pipeline.ratio_drop[v]))
        .join(' / '),
      setup: `trace only / recommended / full: (off − on) ÷ off; target ≤ 5 % recommended; worker CPU per query ${all((v) => fmt(p[v].worker_cpu_ms_per_query, 2))} ms`,
    },
    {
      scenario: 'tracing',
      figure: 'ingest ratio',
      value: all((v) => fmt(i[v].ratio_to_raw_add, 3)),
      setup: `${order}: updates/s ${all((v) => fmt(i[v].accepted_per_s))} ÷ raw add ${fmt(t.ingest.raw_add.jobs_per_s)}/s`,
    },
    {
      scenario: 'tracing',
      figure: 'ingest drop',
      value: (['trace_only', 'recommended', 'full_sampling'] as const)
        .map((v) => pct(t.ingest.ratio_drop[v]))
        .join(' / '),
      setup: `trace only / recommended / full; CPU per update: ingest ${all((v) => fmt(i[v].cpu_ms_per_update, 3))} ms, redis ${all((v) => fmt(i[v].redis_cpu_ms_per_update, 3))} ms`,
    },
    {
      scenario: 'tracing',
      figure: 'spans exported',
      value: `${fmt(t.otlp_received.recommended?.spans ?? 0)} / ${fmt(t.otlp_received.full_sampling?.spans ?? 0)}`,
      setup: `recommended / full, received by the discard sink (its CPU ${fmt(t.otlp_sink_cpu_ms)} ms, not counted)`,
    },
  ];
}

function bulkImportRows(b: BulkImportResult): TableRow[] {
  const run = `${fmt(b.patients)} patients, ${fmt(b.resources)} resources (${fmt(b.export.mib, 0)} MiB NDJSON)`;
  const rows: TableRow[] = [
    {
      scenario: 'bulk_import',
      figure: 'bulk_import_resources_per_s',
      value: fmt(b.bulk_import_resources_per_s, 0, '/s'),
      setup: `${run} in ${fmt(b.seconds, 1)} s (reading ${fmt(b.import.spreading_seconds, 1)} s), ${fmt(b.queries_opened)} queries opened, no worker, --max-waiting 0`,
    },
    {
      scenario: 'bulk_import',
      figure: 'batch_route_updates_per_s',
      value: fmt(b.batch_route_updates_per_s, 0, '/s'),
      setup: `ingest_batch for ${b.batch_route.seconds} s just before, ${b.settings.batchRoute.batchSize} per call, ${b.settings.batchRoute.concurrency} in flight`,
    },
    {
      scenario: 'bulk_import',
      figure: 'bulk_import_ratio',
      value: fmt(b.bulk_import_ratio, 3),
      setup: `resources/s ÷ batch updates/s; target ≥ 0.5; patients/s ÷ batch updates/s ${fmt(b.bulk_import_patient_ratio, 3)}`,
    },
    {
      scenario: 'bulk_import',
      figure: 'import_peak_rss_mib',
      value: fmt(b.import_peak_rss_mib, 0, 'MiB'),
      setup: `VmHWM of the import child; target ≤ 300; CPU ${fmt(b.import.cpu_ms_per_resource, 3)} ms per resource`,
    },
  ];
  const paced = b.paced;
  rows.push({
    scenario: 'bulk_import',
    figure: 'worker_peak_rss_mib',
    value: fmt(b.worker_peak_rss_mib, 0, 'MiB'),
    setup:
      paced === null
        ? 'not run (--bulk-skip-paced)'
        : `paced import (--max-waiting ${paced.max_waiting}) in ${fmt(paced.import.seconds, 1)} s with a worker; ` +
          `import peak ${fmt(paced.import.peak_rss_mib, 0)} MiB; backlog max ${fmt(paced.backlog_max.total)}; target ≤ 300`,
  });
  return rows;
}

function tableRows(results: Results): TableRow[] {
  const rows: TableRow[] = [];
  const { ingest, pipeline, in_flight: inflight, polling_cost: polling } = results;
  if (ingest) {
    const o = ingest.open_loop;
    const c = ingest.closed_loop;
    const offered = `open loop ${fmt(o.offered_per_s)}/s for ${ingest.settings.openLoopSeconds} s, ${ingest.settings.patients} patients`;
    rows.push(
      {
        scenario: 'ingest',
        figure: 'latency p50',
        value: fmt(o.latency_ms.p50, 2, 'ms'),
        setup: offered,
      },
      {
        scenario: 'ingest',
        figure: 'latency p99',
        value: fmt(o.latency_ms.p99, 2, 'ms'),
        setup: `${offered}; achieved ${fmt(o.achieved_per_s)}/s`,
      },
      {
        scenario: 'ingest',
        figure: 'max accepted',
        value: fmt(c.accepted_per_s, 0, '/s'),
        setup: `closed loop, ${c.clients} keep-alive clients, ${ingest.settings.closedLoopSeconds} s`,
      },
      {
        scenario: 'ingest',
        figure: 'latency p50 / p99 at max',
        value: `${fmt(c.latency_ms.p50, 1)} / ${fmt(c.latency_ms.p99, 1)} ms`,
        setup: `closed loop, ${c.clients} clients`,
      },
      {
        scenario: 'ingest',
        figure: 'CPU per update',
        value: `${fmt(c.cpu_ms_per_update.ingest, 3)} / ${fmt(c.cpu_ms_per_update.redis, 3)} / ${fmt(c.cpu_ms_per_update.load_generator, 3)} ms`,
        setup: 'closed loop: ingest child / redis-server / bench (load generator)',
      },
      {
        scenario: 'ingest',
        figure: 'raw BullMQ add',
        value: fmt(ingest.vs_raw_add.raw_add.jobs_per_s, 0, '/s'),
        setup: `${ingest.vs_raw_add.raw_add.concurrency} in flight, same Redis, job data = the update body`,
      },
      {
        scenario: 'ingest',
        figure: 'bare node:http server',
        value: fmt(ingest.vs_raw_add.http_floor.requests_per_s, 0, '/s'),
        setup: `the HTTP floor: same client and load, no work; ÷ raw add ${fmt(ingest.vs_raw_add.http_floor_ratio, 3)}`,
      },
      {
        scenario: 'ingest',
        figure: 'ratio ingest / raw add',
        value: fmt(ingest.vs_raw_add.ratio, 3),
        setup: `both with ${ingest.vs_raw_add.clients} in flight; ingest p99 ${fmt(ingest.vs_raw_add.ingest_p99_ms, 1, 'ms')}`,
      },
    );
  }
  if (results.ingest_batch) {
    const b = results.ingest_batch;
    const size = `${b.settings.batchSize} per call, ${b.settings.concurrency} calls in flight`;
    rows.push(
      {
        scenario: 'ingest_batch',
        figure: 'batch updates accepted',
        value: fmt(b.batch.updates_per_s, 0, '/s'),
        setup: `POST /v1/record-updates/batch, JSON arrays, ${size}, ${b.settings.seconds} s`,
      },
      {
        scenario: 'ingest_batch',
        figure: 'batch latency p50 / p99',
        value: `${fmt(b.batch.request_latency_ms.p50, 1)} / ${fmt(b.batch.request_latency_ms.p99, 1)} ms`,
        setup: 'per batch request, until every update is durable',
      },
      {
        scenario: 'ingest_batch',
        figure: 'CPU per update',
        value: `${fmt(b.batch.cpu_ms_per_update.ingest, 3)} / ${fmt(b.batch.cpu_ms_per_update.redis, 3)} / ${fmt(b.batch.cpu_ms_per_update.load_generator, 3)} ms`,
        setup: 'ingest child / redis-server / bench (load generator)',
      },
      {
        scenario: 'ingest_batch',
        figure: 'raw BullMQ addBulk',
        value: fmt(b.raw_addbulk.jobs_per_s, 0, '/s'),
        setup: `${size}, same Redis, job data = the update item`,
      },
      {
        scenario: 'ingest_batch',
        figure: 'ratio batch / raw addBulk',
        value: fmt(b.ratio_to_raw_addbulk, 3),
        setup: size,
      },
    );
  }
  if (results.mllp) {
    const m = results.mllp;
    rows.push(
      {
        scenario: 'mllp',
        figure: 'mllp_messages_per_s',
        value: fmt(m.mllp_messages_per_s, 0, '/s'),
        setup: `ADT^A08 with DG1, AA after durable, ${m.settings.connections} connections, ${m.settings.seconds} s`,
      },
      {
        scenario: 'mllp',
        figure: 'latency p50 / p99',
        value: `${fmt(m.latency_ms.p50, 1)} / ${fmt(m.latency_ms.p99, 1)} ms`,
        setup: `${m.settings.connections} connections, message to ACK`,
      },
    );
  }
  if (pipeline) {
    const conc = `concurrency ${pipeline.settings.concurrency}`;
    rows.push(
      {
        scenario: 'pipeline',
        figure: 'queries completed',
        value: fmt(pipeline.pipeline.queries_per_s, 0, '/s'),
        setup: `${fmt(pipeline.pipeline.queries)} queries, service latency 0, poll first 10 ms, debounce 10 ms, ${conc}`,
      },
      {
        scenario: 'pipeline',
        figure: 'BullMQ no-op jobs',
        value: fmt(pipeline.bullmq_noop.jobs_per_s, 0, '/s'),
        setup: `${fmt(pipeline.bullmq_noop.jobs)} jobs, same Redis, ${conc}`,
      },
      {
        scenario: 'pipeline',
        figure: 'ratio pipeline / no-op',
        value: fmt(pipeline.ratio, 3),
        setup: 'each query is two job activations and two HTTP calls',
      },
      {
        scenario: 'pipeline',
        figure: 'worker CPU per query / job',
        value: `${fmt(pipeline.pipeline.worker_cpu_ms_per_query, 2)} / ${fmt(pipeline.bullmq_noop.worker_cpu_ms_per_job, 3)} ms`,
        setup: 'user + system of the worker child / of the no-op worker child, over each run',
      },
    );
  }
  if (inflight) {
    const n = `${fmt(inflight.settings.queries)} queries in flight, remote jobs ${inflight.settings.jobLatencyMs / 1000} s`;
    const late = inflight.poll_lateness_ms.sampled_active_jobs;
    rows.push(
      {
        scenario: 'in flight',
        figure: 'submitted in',
        value: fmt(inflight.submit_seconds, 1, 's'),
        setup: n,
      },
      {
        scenario: 'in flight',
        figure: 'worker RSS',
        value: fmt(inflight.worker_rss_mib.all_submitted, 0, 'MiB'),
        setup:
          `all submitted; idle before ${fmt(inflight.worker_rss_mib.idle, 0)} MiB, ` +
          `max while submitting ${fmt(inflight.worker_rss_mib.max_while_submitting, 0)} MiB, ` +
          `max in window ${fmt(inflight.worker_rss_mib.max_in_window, 0)} MiB, heap used ${fmt(inflight.worker_heap_used_mib, 0)} MiB`,
      },
      {
        scenario: 'in flight',
        figure: 'Redis per query',
        value: fmt(inflight.redis.bytes_per_inflight_query.queue_and_state, 0, 'B'),
        setup: 'queue job + delayed entry + query state (used_memory delta / N)',
      },
      {
        scenario: 'in flight',
        figure: 'Redis per query + patient',
        value: fmt(
          inflight.redis.bytes_per_inflight_query.including_patient_record_and_crosswalk,
          0,
          'B',
        ),
        setup: 'plus stored record and crosswalk, one patient per query',
      },
      {
        scenario: 'in flight',
        figure: 'poll lateness p50 / p99',
        value: `${fmt(late.p50, 1)} / ${fmt(late.p99, 1)} ms`,
        setup: `${fmt(late.count)} sampled polls over ${inflight.settings.windowSeconds} s, default schedule`,
      },
    );
    const h = inflight.poll_lateness_ms.worker_histogram;
    if (h)
      rows.push({
        scenario: 'in flight',
        figure: 'lateness p50 / p99 (metric)',
        value: `${fmt(h.p50, 1)} / ${fmt(h.p99, 1)} ms`,
        setup: `cw_poll_lateness_seconds, ${fmt(h.count)} polls in the same window`,
      });
  }
  if (results.cluster) {
    const c = results.cluster;
    const spread = (run: ClusterResult['single']) =>
      run.commands_by_node.map((n) => `${fmt((n.share ?? NaN) * 100, 0)} %`).join(' / ');
    rows.push(
      {
        scenario: 'cluster',
        figure: '1 partition, one Redis',
        value: fmt(c.single.queries_per_s, 0, '/s'),
        setup: `${fmt(c.single.queries)} queries, concurrency ${c.single.concurrency_per_partition}; ${fmt(c.single.commands_per_query, 1)} Redis commands per query`,
      },
      {
        scenario: 'cluster',
        figure: `${c.cluster.partitions} partitions, 3-node cluster`,
        value: fmt(c.cluster.queries_per_s, 0, '/s'),
        setup: `${fmt(c.cluster.queries)} queries, concurrency ${c.cluster.concurrency_per_partition} per partition; ${fmt(c.cluster.commands_per_query, 1)} commands per query`,
      },
      {
        scenario: 'cluster',
        figure: 'ratio cluster / one Redis',
        value: fmt(c.ratio, 3),
        setup:
          'same run, same machine: every redis-server, the worker and the load share its cores',
      },
      {
        scenario: 'cluster',
        figure: 'commands per master',
        value: spread(c.cluster),
        setup: c.cluster.commands_by_node
          .map((n) => `${n.node} (partition ${n.partitions.join(',')}) ${fmt(n.calls)}`)
          .join(', '),
      },
    );
  }
  if (results.detection) {
    for (const line of [results.detection.latency, results.detection.spread]) {
      const setup = `${line.line}; ${line.completed} measured after ${results.detection.settings.learningQueries} learning, default schedule`;
      const lag = line.detection_lag_ms;
      rows.push(
        {
          scenario: 'detection',
          figure: 'polls per query (mean)',
          value: fmt(line.polls_per_query.mean, 2),
          setup,
        },
        {
          scenario: 'detection',
          figure: 'lag p50 / p95',
          value: `${fmt((lag.p50 ?? NaN) / 1000, 2)} / ${fmt((lag.p95 ?? NaN) / 1000, 2)} s`,
          setup: `${line.line}: first GET that found the job finished - its end`,
        },
        {
          scenario: 'detection',
          figure: 'lag p95 / L, per job',
          value: `${fmt(line.lag_p95_fraction_of_nominal, 3)}, ${fmt(line.lag_fraction_of_job_duration_p95, 3)}`,
          setup: `${line.line}: p95(lag) / nominal latency; p95 of each lag / its job's duration`,
        },
      );
    }
  }
  if (results.tracing) rows.push(...tracingRows(results.tracing));
  if (results.bulk_import) rows.push(...bulkImportRows(results.bulk_import));
  if (results.cds_hooks) rows.push(...cdsHooksRows(results.cds_hooks));
  if (polling) {
    for (const line of polling.lines) {
      const sched = `${line.schedule}: ${line.poll.first_delay_ms / 1000} s x${line.poll.factor} cap ${line.poll.max_delay_ms / 1000} s ±${line.poll.jitter * 100} %`;
      rows.push(
        {
          scenario: 'polling cost',
          figure: 'polls per query (mean)',
          value: fmt(line.polls_per_query.mean, 2),
          setup: `${sched}; ${line.completed} jobs of ${polling.settings.jobLatencyMs.min / 1000}-${polling.settings.jobLatencyMs.max / 1000} s`,
        },
        {
          scenario: 'polling cost',
          figure: 'detection lag p50 / p99',
          value: `${fmt((line.detection_lag_ms.p50 ?? NaN) / 1000, 2)} / ${fmt((line.detection_lag_ms.p99 ?? NaN) / 1000, 2)} s`,
          setup: sched,
        },
      );
    }
  }
  return rows;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      inflight: { type: 'string' },
      'inflight-window': { type: 'string' },
      pipeline: { type: 'string' },
      noop: { type: 'string' },
      concurrency: { type: 'string' },
      'ingest-rate': { type: 'string' },
      'ingest-seconds': { type: 'string' },
      'ingest-clients': { type: 'string' },
      'batch-size': { type: 'string' },
      'batch-concurrency': { type: 'string' },
      'batch-seconds': { type: 'string' },
      polling: { type: 'string' },
      detection: { type: 'string' },
      'detection-latency': { type: 'string' },
      'detection-learning': { type: 'string' },
      cluster: { type: 'string' },
      'cluster-concurrency': { type: 'string' },
      'mllp-connections': { type: 'string' },
      'mllp-seconds': { type: 'string' },
      'tracing-rounds': { type: 'string' },
      'tracing-queries': { type: 'string' },
      'tracing-seconds': { type: 'string' },
      'bulk-patients': { type: 'string' },
      'bulk-skip-paced': { type: 'boolean', default: false },
      'cds-clients': { type: 'string' },
      'cds-seconds': { type: 'string' },
      quick: { type: 'boolean', default: false },
      'shared-redis': { type: 'boolean', default: false },
      'log-level': { type: 'string', default: 'warn' },
      out: { type: 'string', default: 'bench-output/bench.json' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stderr.write(`${USAGE}\n`);
    return;
  }
  const only = (values.only ?? SCENARIOS.join(',')).split(',').map((s) => s.trim());
  for (const s of only) {
    if (!(SCENARIOS as readonly string[]).includes(s))
      throw new Error(`unknown scenario "${s}"\n${USAGE}`);
  }
  const runs = (s: Scenario) => only.includes(s);
  const quick = values.quick;
  const concurrency = intOption(values.concurrency, DEFAULT_PIPELINE.concurrency, 'concurrency');
  const ingestSeconds = intOption(
    values['ingest-seconds'],
    quick ? 3 : DEFAULT_INGEST.openLoopSeconds,
    'ingest-seconds',
  );
  const ingest = {
    ...DEFAULT_INGEST,
    patients: quick ? 50 : DEFAULT_INGEST.patients,
    openLoopRate: intOption(values['ingest-rate'], DEFAULT_INGEST.openLoopRate, 'ingest-rate'),
    openLoopSeconds: ingestSeconds,
    closedLoopSeconds: ingestSeconds,
    closedLoopClients: intOption(
      values['ingest-clients'],
      DEFAULT_INGEST.closedLoopClients,
      'ingest-clients',
    ),
    warmupSeconds: quick ? 1 : DEFAULT_INGEST.warmupSeconds,
  };
  const ingestBatch = {
    ...DEFAULT_INGEST_BATCH,
    patients: quick ? 50 : DEFAULT_INGEST_BATCH.patients,
    batchSize: intOption(values['batch-size'], DEFAULT_INGEST_BATCH.batchSize, 'batch-size'),
    concurrency: intOption(
      values['batch-concurrency'],
      DEFAULT_INGEST_BATCH.concurrency,
      'batch-concurrency',
    ),
    seconds: intOption(
      values['batch-seconds'],
      quick ? 3 : DEFAULT_INGEST_BATCH.seconds,
      'batch-seconds',
    ),
    warmupSeconds: quick ? 1 : DEFAULT_INGEST_BATCH.warmupSeconds,
  };
  const mllp = {
    ...DEFAULT_MLLP,
    patients: quick ? 50 : DEFAULT_MLLP.patients,
    connections: intOption(
      values['mllp-connections'],
      DEFAULT_MLLP.connections,
      'mllp-connections',
    ),
    seconds: intOption(values['mllp-seconds'], quick ? 3 : DEFAULT_MLLP.seconds, 'mllp-seconds'),
    warmupSeconds: quick ? 1 : DEFAULT_MLLP.warmupSeconds,
  };
  const pipeline = {
    queries: intOption(values.pipeline, quick ? 500 : DEFAULT_PIPELINE.queries, 'pipeline'),
    noopJobs: intOption(values.noop, quick ? 5_000 : DEFAULT_PIPELINE.noopJobs, 'noop'),
    concurrency,
  };
  const inflight = {
    ...DEFAULT_INFLIGHT,
    queries: intOption(values.inflight, quick ? 1_000 : DEFAULT_INFLIGHT.queries, 'inflight'),
    windowSeconds: intOption(
      values['inflight-window'],
      quick ? 10 : DEFAULT_INFLIGHT.windowSeconds,
      'inflight-window',
    ),
    jobLatencyMs: quick ? 20_000 : DEFAULT_INFLIGHT.jobLatencyMs,
    concurrency,
  };
  const polling = {
    ...DEFAULT_POLLING_COST,
    queries: intOption(values.polling, quick ? 30 : DEFAULT_POLLING_COST.queries, 'polling'),
    jobLatencyMs: quick ? { min: 1_000, max: 8_000 } : DEFAULT_POLLING_COST.jobLatencyMs,
  };
  const detection = {
    ...DEFAULT_DETECTION,
    latencyMs:
      intOption(
        values['detection-latency'],
        (quick ? 6_000 : DEFAULT_DETECTION.latencyMs) / 1_000,
        'detection-latency',
      ) * 1_000,
    spreadMs: quick ? { min: 1_000, max: 8_000 } : DEFAULT_DETECTION.spreadMs,
    learningQueries: intOption(
      values['detection-learning'],
      quick ? 20 : DEFAULT_DETECTION.learningQueries,
      'detection-learning',
    ),
    measuredQueries: intOption(
      values.detection,
      quick ? 40 : DEFAULT_DETECTION.measuredQueries,
      'detection',
    ),
  };

  const clusterSettings = {
    ...DEFAULT_CLUSTER,
    queries: intOption(values.cluster, quick ? 300 : DEFAULT_CLUSTER.queries, 'cluster'),
    concurrency: intOption(
      values['cluster-concurrency'],
      DEFAULT_CLUSTER.concurrency,
      'cluster-concurrency',
    ),
  };

  const tracing = {
    ...DEFAULT_TRACING,
    rounds: intOption(values['tracing-rounds'], DEFAULT_TRACING.rounds, 'tracing-rounds'),
    queriesPerSlice: intOption(
      values['tracing-queries'],
      quick ? 150 : DEFAULT_TRACING.queriesPerSlice,
      'tracing-queries',
    ),
    noopJobsPerSlice: quick ? 1_000 : DEFAULT_TRACING.noopJobsPerSlice,
    warmupQueries: quick ? 50 : DEFAULT_TRACING.warmupQueries,
    ingestSeconds: intOption(
      values['tracing-seconds'],
      quick ? 4 : DEFAULT_TRACING.ingestSeconds,
      'tracing-seconds',
    ),
    ingestPatients: quick ? 50 : DEFAULT_TRACING.ingestPatients,
    warmupSeconds: quick ? 1 : DEFAULT_TRACING.warmupSeconds,
    concurrency,
  };

  const bulkImport = {
    ...DEFAULT_BULK_IMPORT,
    patients: intOption(
      values['bulk-patients'],
      quick ? 2_000 : DEFAULT_BULK_IMPORT.patients,
      'bulk-patients',
    ),
    batchRoute: {
      ...ingestBatch,
      seconds: Math.min(ingestBatch.seconds, DEFAULT_BULK_IMPORT.batchRoute.seconds),
      warmupSeconds: Math.min(
        ingestBatch.warmupSeconds,
        DEFAULT_BULK_IMPORT.batchRoute.warmupSeconds,
      ),
    },
    paced: !values['bulk-skip-paced'],
    workerConcurrency: concurrency,
  };

  const cdsHooks = {
    clients: intOption(values['cds-clients'], DEFAULT_CDS_HOOKS.clients, 'cds-clients'),
    seconds: intOption(values['cds-seconds'], quick ? 3 : DEFAULT_CDS_HOOKS.seconds, 'cds-seconds'),
    patients: quick ? 500 : DEFAULT_CDS_HOOKS.patients,
    warmupSeconds: quick ? 1 : DEFAULT_CDS_HOOKS.warmupSeconds,
  };

  const started = Date.now();
  // Other work on the machine (tests, builds) moves every figure: the load average tells.
  const loadAtStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
  const cleanup = new Cleanup();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) process.exit(130);
    interrupted = true;
    process.stderr.write(`\nbench: ${signal}: stopping everything it started\n`);
    void cleanup.run().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const tmpDir = mkdtempSync(join(os.tmpdir(), 'cwbench-'));
  cleanup.add('temporary directory', async () => rmSync(tmpDir, { recursive: true, force: true }));
  const say = (message: string) =>
    process.stderr.write(
      `[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${message}\n`,
    );
  try {
    const redis = await benchRedis(cleanup, values['shared-redis']);
    say(`redis ${redis.version}: ${redis.origin} at ${redis.url}`);
    const ctx: BenchContext = {
      redis,
      cleanup,
      runId: randomBytes(4).toString('hex'),
      tmpDir,
      logLevel: values['log-level'],
      secret: generateCrosswalkSecret(),
      outboundKey: generateCrosswalkSecret(),
      say,
    };
    if (!redis.private) {
      // Scenarios delete their own keys as they end; this catches an interrupted one.
      cleanup.add('bench keys', () => clearRedis(redis, `{cwbench-${ctx.runId}-`));
    }
    // Between scenarios the private Redis is emptied (synchronously) so memory figures start clean.
    const reset = async () => {
      if (redis.private) await redis.admin.flushall('SYNC');
    };

    const results: Results = {};
    if (runs('ingest')) {
      await reset();
      results.ingest = await ingestScenario(ctx, ingest);
    }
    if (runs('ingest_batch')) {
      await reset();
      results.ingest_batch = await ingestBatchScenario(ctx, ingestBatch);
    }
    if (runs('mllp')) {
      await reset();
      results.mllp = await mllpScenario(ctx, mllp);
    }
    if (runs('pipeline')) {
      await reset();
      results.pipeline = await pipelineScenario(ctx, pipeline);
    }
    if (runs('inflight')) {
      await reset();
      results.in_flight = await inflightScenario(ctx, inflight);
    }
    if (runs('polling') || runs('detection')) {
      // Both mostly wait on remote jobs (few queries, seconds of latency): side by side they save
      // minutes, and neither's figures (polls, lags of seconds) feel the other's load.
      await reset();
      const [pollingResult, detectionResult] = await Promise.all([
        runs('polling') ? pollingCostScenario(ctx, polling) : undefined,
        runs('detection') ? detectionScenario(ctx, detection) : undefined,
      ]);
      if (pollingResult) results.polling_cost = pollingResult;
      if (detectionResult) results.detection = detectionResult;
    }
    if (runs('cluster')) {
      await reset();
      results.cluster = await clusterScenario(ctx, clusterSettings);
    }
    if (runs('tracing')) {
      await reset();
      results.tracing = await tracingScenario(ctx, tracing);
    }
    if (runs('bulk_import')) {
      await reset();
      results.bulk_import = await bulkImportScenario(ctx, bulkImport);
    }
    if (runs('cds_hooks')) {
      await reset();
      results.cds_hooks = await cdsHooksScenario(ctx, cdsHooks);
    }

    const cpus = os.cpus();
    const summary = buildSummary(results, { quick });
    const document = {
      benchmark: 'concordance-worker',
      started_at: new Date(started).toISOString(),
      wall_seconds: Math.round((Date.now() - started) / 100) / 10,
      command: `node bench/run-bench.ts ${process.argv.slice(2).join(' ')}`.trim(),
      summary,
      machine: {
        cpus: cpus.length,
        cpu_model: cpus[0]?.model ?? 'unknown',
        memory_gib: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
        platform: `${os.platform()} ${os.release()}`,
        node: process.version,
        redis: redis.version,
        redis_origin: redis.origin,
        bullmq: packageVersion('bullmq'),
        commit: gitCommit(),
        load_average_at_start: loadAtStart,
        load_average_at_end: os.loadavg().map((l) => Math.round(l * 100) / 100),
      },
      notes: [
        'Everything runs on this one machine: the load generator, the local service and Redis share its cores with the process measured.',
        'Child processes log at LOG_LEVEL ' + ctx.logLevel + '.',
        'Other processes on the machine move the figures: compare load_average_at_start/_end with the core count.',
      ],
      ...results,
    };
    const json = JSON.stringify(document);
    const out = resolve(values.out);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
    process.stderr.write(
      `\n${renderTable(tableRows(results))}\n\nsummary ${JSON.stringify(summary, null, 2)}\n` +
        `\nwall time ${document.wall_seconds} s; JSON in ${out}\n`,
    );
    process.stdout.write(`${json}\n`);
  } finally {
    await cleanup.run();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
