import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { z } from 'zod';
import { generateCrosswalkSecret } from '../../src/identity/crosswalk-keys.ts';
import { ImportSummarySchema } from '../../src/import/import-state.ts';
import { queryOutboxKey } from '../../src/queries/query-outbox.ts';
import { CONCORDANCE_QUERIES } from '../../src/queues/queue-names.ts';
import { workerConnection } from '../../src/queues/redis-connections.ts';
import {
  benchPrefix,
  configFor,
  startBenchSimulator,
  startWorker,
  workerEnv,
  writeConfig,
  type BenchContext,
} from '../support/fixtures.ts';
import { RESOURCES_PER_PATIENT, writeBulkNdjson } from '../support/bulk-ndjson.ts';
import {
  clearRedis,
  cliProcess,
  cpuMeter,
  processCpuMs,
  processMemory,
  type ChildProc,
} from '../support/processes.ts';
import { MiB, round } from '../support/stats.ts';
import {
  DEFAULT_INGEST_BATCH,
  ingestBatchScenario,
  type IngestBatchSettings,
} from './ingest-batch.ts';
import { QUERIES_CONFIG } from './pipeline.ts';

export interface BulkImportSettings {
  /** Patients of the synthetic export (nine resources each). */
  patients: number;
  /** The batch route's baseline, measured in the same run (`ingest_batch`, short). */
  batchRoute: IngestBatchSettings;
  /** Import a second time, paced, with a worker child running: its peak RSS. */
  paced: boolean;
  /** `--max-waiting` of the paced import. */
  maxWaiting: number;
  /** `queries.concurrency` of the paced run's worker. */
  workerConcurrency: number;
}

export const DEFAULT_BULK_IMPORT: BulkImportSettings = {
  patients: 20_000,
  batchRoute: { ...DEFAULT_INGEST_BATCH, seconds: 5, warmupSeconds: 2 },
  paced: true,
  maxWaiting: 100,
  workerConcurrency: 50,
};

/** The command's `--json` answer (src/cli/commands/import.ts). */
const ImportAnswerSchema = ImportSummarySchema.extend({
  run_id: z.string(),
  already_done: z.boolean(),
  started_at: z.iso.datetime(),
  finished_at: z.iso.datetime().nullable(),
  paced_waits: z.int(),
});
type ImportAnswer = z.infer<typeof ImportAnswerSchema>;

/** One run of the import child, as sampled from /proc and read from its summary. */
export interface ImportRun {
  exit_code: number | null;
  patients: number;
  patients_changed: number;
  resources: Record<string, number>;
  total_resources: number;
  queries_opened: number;
  unmapped_problems: number;
  errors: number;
  paced_waits: number;
  /** The summary's `finished_at − started_at`. */
  seconds: number;
  /** Of them, reading and spreading the files (first phase), from the state file's phase. */
  spreading_seconds: number | null;
  /** Spawn to exit (Node start, config, Redis connection included). */
  wall_seconds: number;
  resources_per_s: number | null;
  patients_per_s: number | null;
  /** VmHWM of the child, read every 100 ms until it exited (the largest). */
  peak_rss_mib: number | null;
  /** User + system CPU of the child (last reading before exit, ≤ 100 ms short). */
  cpu_ms: number | null;
  cpu_ms_per_resource: number | null;
  redis_cpu_ms: number | null;
}

export interface PacedRun {
  max_waiting: number;
  import: ImportRun;
  worker_rss_mib: { idle: number | null; max_sampled: number | null; peak_hwm: number | null };
  worker_cpu_ms: number | null;
  /** Result events in the outbound queue when the import exited (queries the worker finished). */
  results_delivered_during_import: number;
  /**
   * The largest backlog sampled every 250 ms: the queue's waiting + delayed + prioritized jobs
   * (what the pacer reads) and the outbox (`qdue`, opened queries not yet relayed, which it does
   * not read); `total` is the largest sum of one sample.
   */
  backlog_max: { queue: number; outbox: number; total: number };
}

export interface BulkImportResult {
  bulk_import_resources_per_s: number | null;
  batch_route_updates_per_s: number | null;
  /** `bulk_import_resources_per_s` ÷ `batch_route_updates_per_s`; target ≥ 0.5. */
  bulk_import_ratio: number | null;
  /**
   * Patients committed per second ÷ `batch_route_updates_per_s`: commit for commit (a patient's
   * nine resources are one commit, as one batch update is). Not a target; read with the ratio.
   */
  bulk_import_patient_ratio: number | null;
  /** Target ≤ 300. */
  import_peak_rss_mib: number | null;
  /** The worker's VmHWM over the paced run; null when it did not run. */
  worker_peak_rss_mib: number | null;
  patients: number;
  resources: number;
  queries_opened: number;
  seconds: number;
  settings: BulkImportSettings & { setup: string; paced_setup: string | null };
  export: {
    resources: Record<string, number>;
    bytes: number;
    mib: number;
    generate_seconds: number;
  };
  import: ImportRun;
  batch_route: {
    updates_per_s: number | null;
    raw_addbulk_jobs_per_s: number | null;
    ratio_to_raw_addbulk: number | null;
    seconds: number;
  };
  paced: PacedRun | null;
}

const mib = (bytes: number | undefined | null) =>
  bytes === undefined || bytes === null || !Number.isFinite(bytes) ? null : round(bytes / MiB, 1);

/** The run's phase in its state file (`spreading`, `committing`, `done`), if it can be read. */
function phaseOf(stateDir: string): string | undefined {
  try {
    const state = JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8')) as {
      phase?: unknown;
    };
    return typeof state.phase === 'string' ? state.phase : undefined;
  } catch {
    return undefined;
  }
}

/** The larger of two readings; a missing one (NaN: a process that exited) changes nothing. */
const larger = (known: number, reading: number | undefined) =>
  reading === undefined || !Number.isFinite(reading) ? known : Math.max(known, reading);

/**
 * Runs `concordance-worker [--config] import bulk-fhir …` as a child and samples it every 100 ms
 * until it exits: its VmHWM, its CPU, and the phase in its state file; `onTick` runs on the same
 * beat (the paced run samples the worker and the backlog there).
 */
async function runImportChild(
  ctx: BenchContext,
  options: {
    name: string;
    args: string[];
    env: Record<string, string>;
    stateDir: string;
    timeoutMs: number;
    onTick?: () => Promise<void>;
  },
): Promise<ImportRun> {
  const t0 = Date.now();
  const redisCpu = cpuMeter(ctx.redis.pid);
  const proc: ChildProc = cliProcess(options.name, options.args, options.env);
  const remove = ctx.cleanup.add(options.name, () => proc.stop());
  const stdout: Buffer[] = [];
  proc.child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
  const closed = once(proc.child, 'close');
  let peak = 0;
  let cpuMs = 0;
  let spreading = false;
  let committingAt: number | undefined;
  const deadline = t0 + options.timeoutMs;
  try {
    while (proc.running) {
      if (Date.now() > deadline) {
        throw new Error(
          `${options.name} did not finish within ${options.timeoutMs / 1000} s:\n${proc.tail()}`,
        );
      }
      peak = larger(peak, processMemory(proc.pid)?.peak);
      cpuMs = larger(cpuMs, processCpuMs(proc.pid));
      // The folder may still hold the previous run (`--restart`): the first phase is over once
      // the state says `committing` after it said `spreading`.
      if (committingAt === undefined) {
        const phase = phaseOf(options.stateDir);
        if (phase === 'spreading') spreading = true;
        else if (spreading && (phase === 'committing' || phase === 'done'))
          committingAt = Date.now();
      }
      await options.onTick?.();
      await Promise.race([sleep(100), proc.exited]);
    }
    await closed;
  } finally {
    await proc.stop();
    remove();
  }
  const wallSeconds = (Date.now() - t0) / 1000;
  const code = proc.child.exitCode;
  let answer: ImportAnswer;
  try {
    answer = ImportAnswerSchema.parse(JSON.parse(Buffer.concat(stdout).toString('utf8')));
  } catch (err) {
    throw new Error(
      `${options.name} (exit ${code}) printed no import summary: ${(err as Error).message}\n${proc.tail()}`,
      { cause: err },
    );
  }
  if (code !== 0 || answer.finished_at === null || answer.already_done) {
    throw new Error(
      `${options.name} exited ${code} (already_done ${answer.already_done}, errors ${answer.errors}): ` +
        `${JSON.stringify(answer.error_list.slice(0, 5))}\n${proc.tail()}`,
    );
  }
  const started = Date.parse(answer.started_at);
  const seconds = (Date.parse(answer.finished_at) - started) / 1000;
  const total = Object.values(answer.resources).reduce((sum, n) => sum + n, 0);
  const per = (n: number) => (seconds > 0 ? round(n / seconds, 0) : null);
  return {
    exit_code: code,
    patients: answer.patients,
    patients_changed: answer.patients_changed,
    resources: answer.resources,
    total_resources: total,
    queries_opened: answer.queries_opened,
    unmapped_problems: answer.unmapped_problems,
    errors: answer.errors,
    paced_waits: answer.paced_waits,
    seconds: round(seconds, 2) ?? 0,
    spreading_seconds:
      committingAt === undefined ? null : round((committingAt - started) / 1000, 1),
    wall_seconds: round(wallSeconds, 2) ?? 0,
    resources_per_s: per(total),
    patients_per_s: per(answer.patients),
    peak_rss_mib: peak === 0 ? null : mib(peak),
    cpu_ms: cpuMs === 0 ? null : cpuMs,
    cpu_ms_per_resource: cpuMs === 0 || total === 0 ? null : round(cpuMs / total, 4),
    redis_cpu_ms: redisCpu.used(),
  };
}

/** The paced line: a worker child against the zero-latency simulator while the import runs again. */
async function pacedRun(
  ctx: BenchContext,
  settings: BulkImportSettings,
  run: { folder: string; stateDir: string; key: string; timeoutMs: number },
): Promise<PacedRun> {
  const prefix = benchPrefix(ctx, 'bulk-import-paced');
  const configPath = writeConfig(ctx, 'bulk-import-paced', {
    ...QUERIES_CONFIG,
    concurrency: settings.workerConcurrency,
  });
  const simulator = await startBenchSimulator(ctx, { minMs: 0, maxMs: 0 });
  const config = configFor(configPath, workerEnv(ctx, prefix, simulator.url, 0));
  const connection = workerConnection(ctx.redis.url, 'cw-bench-bulk-backlog');
  const queue = new Queue(CONCORDANCE_QUERIES, { connection, prefix });
  const outbound = new Queue(config.delivery.outbound_queue.name, { connection, prefix });
  try {
    const worker = await startWorker(ctx, 'bulk_import worker', {
      configPath,
      prefix,
      simulatorUrl: simulator.url,
      env: { CROSSWALK_KEY: run.key },
    });
    try {
      const idle = processMemory(worker.proc.pid)?.rss;
      const workerCpu = cpuMeter(worker.proc.pid);
      let maxRss = 0;
      const backlog = { queue: 0, outbox: 0, total: 0 };
      let lastBacklogAt = 0;
      const onTick = async () => {
        maxRss = larger(maxRss, processMemory(worker.proc.pid)?.rss);
        if (Date.now() - lastBacklogAt < 250) return;
        lastBacklogAt = Date.now();
        const counts = await queue.getJobCounts('wait', 'delayed', 'prioritized');
        const queued = Object.values(counts).reduce((n, c) => n + c, 0);
        const due = await connection.zcard(queryOutboxKey(prefix));
        backlog.queue = Math.max(backlog.queue, queued);
        backlog.outbox = Math.max(backlog.outbox, due);
        backlog.total = Math.max(backlog.total, queued + due);
      };
      ctx.say(
        `bulk_import: paced import (--max-waiting ${settings.maxWaiting}) with a worker child running`,
      );
      const imported = await runImportChild(ctx, {
        name: 'bulk_import paced import',
        args: [
          '--config',
          configPath,
          ...importArgs(run.folder, run.stateDir, settings.maxWaiting),
          '--restart',
        ],
        env: importEnv(ctx, prefix, run.key),
        stateDir: run.stateDir,
        timeoutMs: run.timeoutMs,
        onTick,
      });
      const hwm = processMemory(worker.proc.pid)?.peak;
      return {
        max_waiting: settings.maxWaiting,
        import: imported,
        worker_rss_mib: { idle: mib(idle), max_sampled: mib(maxRss), peak_hwm: mib(hwm) },
        worker_cpu_ms: workerCpu.used(),
        results_delivered_during_import: await outbound.getWaitingCount(),
        backlog_max: backlog,
      };
    } finally {
      await worker.stop();
    }
  } finally {
    await queue.close();
    await outbound.close();
    connection.disconnect();
    await simulator.close();
    await clearRedis(ctx.redis, prefix);
  }
}

function importArgs(folder: string, stateDir: string, maxWaiting: number): string[] {
  return [
    'import',
    'bulk-fhir',
    '--folder',
    folder,
    '--state-dir',
    stateDir,
    '--max-waiting',
    String(maxWaiting),
    '--json',
  ];
}

function importEnv(ctx: BenchContext, prefix: string, key: string): Record<string, string> {
  return {
    REDIS_URL: ctx.redis.url,
    REDIS_PREFIX: prefix,
    CROSSWALK_KEY: key,
    OUTBOUND_KEY: ctx.outboundKey,
    LOG_LEVEL: ctx.logLevel,
  };
}

/**
 * FHIR Bulk Data import from a folder of NDJSON (`concordance-worker import bulk-fhir --folder`):
 * resources read per second against the batch route's raw throughput in the same run, and the
 * import's peak RSS; then, optionally, the same export imported again, paced, with a worker child
 * draining the queries: the worker's peak RSS.
 */
export async function bulkImportScenario(
  ctx: BenchContext,
  settings: BulkImportSettings,
): Promise<BulkImportResult> {
  const folder = join(ctx.tmpDir, 'bulk-import-export');
  const stateDir = join(ctx.tmpDir, 'bulk-import-state');
  mkdirSync(folder, { recursive: true });
  const removeFiles = ctx.cleanup.add('bulk_import files', async () => {
    rmSync(folder, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  });
  try {
    ctx.say(`bulk_import: writing the NDJSON of ${settings.patients} patients`);
    const g0 = Date.now();
    const written = await writeBulkNdjson(folder, settings.patients);
    const generateSeconds = (Date.now() - g0) / 1000;

    ctx.say('bulk_import: the batch route baseline (ingest_batch, short)');
    const batch = await ingestBatchScenario(ctx, settings.batchRoute);
    if (ctx.redis.private) await ctx.redis.admin.flushall('SYNC');

    const prefix = benchPrefix(ctx, 'bulk-import');
    const key = generateCrosswalkSecret();
    // Generous: a stalled import fails the scenario rather than the whole bench hanging.
    const timeoutMs = Math.max(600_000, settings.patients * 30);
    ctx.say(
      `bulk_import: importing ${written.total_resources} resources (${mib(written.bytes)} MiB), no worker, --max-waiting 0`,
    );
    let imported: ImportRun;
    try {
      imported = await runImportChild(ctx, {
        name: 'bulk_import import',
        args: importArgs(folder, stateDir, 0),
        env: importEnv(ctx, prefix, key),
        stateDir,
        timeoutMs,
      });
    } finally {
      await clearRedis(ctx.redis, prefix);
    }
    if (ctx.redis.private) await ctx.redis.admin.flushall('SYNC');

    const paced = settings.paced
      ? await pacedRun(ctx, settings, {
          folder,
          stateDir,
          key,
          timeoutMs: Math.max(1_800_000, settings.patients * 100),
        })
      : null;

    const updatesPerS = batch.batch.updates_per_s;
    const ratioTo = (perS: number | null) =>
      perS === null || updatesPerS === null || updatesPerS === 0
        ? null
        : round(perS / updatesPerS, 3);
    return {
      bulk_import_resources_per_s: imported.resources_per_s,
      batch_route_updates_per_s: updatesPerS,
      bulk_import_ratio: ratioTo(imported.resources_per_s),
      bulk_import_patient_ratio: ratioTo(imported.patients_per_s),
      import_peak_rss_mib: imported.peak_rss_mib,
      worker_peak_rss_mib: paced?.worker_rss_mib.peak_hwm ?? null,
      patients: imported.patients,
      resources: imported.total_resources,
      queries_opened: imported.queries_opened,
      seconds: imported.seconds,
      settings: {
        ...settings,
        setup:
          `synthetic export: ${settings.patients} patients × ${RESOURCES_PER_PATIENT} resources (Patient, 3 active ICD-10-CM ` +
          'Conditions, 4 LOINC Observations, 1 Encounter: a type the record does not use), one file per type on local disk; ' +
          `one \`concordance-worker import bulk-fhir --folder … --max-waiting 0 --json\` child (LOG_LEVEL ${ctx.logLevel}, ` +
          'default --concurrency 8, problem-list presets on: each patient opens its queries), fresh prefix and CROSSWALK_KEY, ' +
          'no worker running; resources/s = all lines read ÷ (finished_at − started_at) of its summary; peak RSS = its ' +
          'VmHWM read every 100 ms; baseline: the ingest_batch scenario with these settings, just before (batch.updates_per_s)',
        paced_setup: settings.paced
          ? `the same export again (--restart, new prefix) with --max-waiting ${settings.maxWaiting}, one \`concordance-worker work\` ` +
            `child (concurrency ${settings.workerConcurrency}, debounce 10 ms, polls from 10 ms) against the simulator at ` +
            'zero latency in the bench process; worker peak = its VmHWM when the import exited'
          : null,
      },
      export: {
        resources: written.resources,
        bytes: written.bytes,
        mib: mib(written.bytes) ?? 0,
        generate_seconds: round(generateSeconds, 1) ?? 0,
      },
      import: imported,
      batch_route: {
        updates_per_s: updatesPerS,
        raw_addbulk_jobs_per_s: batch.raw_addbulk.jobs_per_s,
        ratio_to_raw_addbulk: batch.ratio_to_raw_addbulk,
        seconds: settings.batchRoute.seconds,
      },
      paced,
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
    removeFiles();
  }
}
