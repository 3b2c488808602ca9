import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Config } from '../../src/config/config-schema.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { AssembledPatient } from '../../src/interface/assembled-patient.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { workerConnection } from '../../src/queues/redis-connections.ts';
import { App } from '../../src/app/compose-app.ts';
import type { QueryScheduler } from '../../src/queries/query-scheduler.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/start-simulator.ts';
import type { Queue } from 'bullmq';
import { z } from 'zod';
import {
  cliProcess,
  freePort,
  waitForHttp,
  type BenchRedis,
  type ChildProc,
  type Cleanup,
} from './processes.ts';

/** What every scenario gets from the entry point. */
export interface BenchContext {
  redis: BenchRedis;
  cleanup: Cleanup;
  /** Random per run: key prefixes are `{cwbench-<runId>-<scenario>}`. */
  runId: string;
  /** Where config files for child processes go. */
  tmpDir: string;
  /** LOG_LEVEL of the child processes. */
  logLevel: string;
  /** The CROSSWALK_KEY shared by the bench and its child processes. */
  secret: string;
  /** The OUTBOUND_KEY of the workers' outbound queue (the channel results are counted in). */
  outboundKey: string;
  /** Progress lines (stderr). */
  say(message: string): void;
}

export const API_KEY = 'bench-api-key';
export const CATEGORY = 'END002';

export function benchPrefix(ctx: BenchContext, scenario: string): string {
  return `{cwbench-${ctx.runId}-${scenario}}`;
}

/** A small de-identified record (type 2 diabetes with an HbA1c), ~1 KB of JSON. */
export function benchRecord(i: number): AssembledPatient {
  return {
    nodes: [
      {
        id: 'c1',
        node_type: 'condition',
        notable: true,
        fhir_id: `Condition/bench-${i}`,
        service_preferred_name: 'Type 2 diabetes mellitus',
        coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }],
      },
      {
        id: 'o1',
        node_type: 'observation',
        notable: true,
        coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'Hemoglobin A1c' }],
        metadata: { value: 7 + (i % 30) / 10, unit: '%' },
      },
      {
        id: 'i1',
        node_type: 'intervention',
        notable: false,
        service_preferred_name: 'Metformin',
        coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '6809' }],
      },
    ],
    relationships: [
      { source_id: 'o1', target_id: 'c1' },
      { source_id: 'i1', target_id: 'c1' },
    ],
    demographics: { age: 40 + (i % 40), gender: i % 2 === 0 ? 'female' : 'male' },
  };
}

/**
 * Writes a `--config` file holding `queries` overrides, with the outbound queue on (results are
 * counted there); returns its path.
 */
export function writeConfig(ctx: BenchContext, name: string, queries: object): string {
  const path = join(ctx.tmpDir, `${name}.yaml`);
  writeFileSync(path, stringify({ queries, delivery: { outbound_queue: { enabled: true } } }));
  return path;
}

/** The configuration a child started with `--config path` and `env` sees. */
export function configFor(path: string, env: Record<string, string>): Config {
  return loadConfig({ file: path, env });
}

/** Runs `fn` over `items` with at most `limit` at once. */
export async function forEachLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const index = next++;
      await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}

export async function startBenchSimulator(
  ctx: BenchContext,
  latency: { minMs: number; maxMs: number },
): Promise<RunningSimulator> {
  const simulator = await startSimulator({
    port: 0,
    apiKeys: [API_KEY],
    latency,
    requestLogSize: 0,
    relationshipCount: 50,
  });
  const remove = ctx.cleanup.add('simulator', () => simulator.close());
  return {
    ...simulator,
    async close() {
      remove();
      await simulator.close();
    },
  };
}

/** The simulator's `/_admin/stats`. */
export async function simulatorStats(simulator: RunningSimulator): Promise<{ jobs: number }> {
  const response = await fetch(`${simulator.url}/_admin/stats`, {
    headers: { 'x-admin-key': API_KEY },
  });
  return (await response.json()) as { jobs: number };
}

/** A remote job's timeline as the simulator's `GET /_admin/jobs/:job_id` tells it. */
export const SimulatorJobSchema = z.object({
  job_id: z.string(),
  outcome: z.string(),
  submitted_at: z.iso.datetime(),
  running_at: z.iso.datetime(),
  finishes_at: z.iso.datetime(),
  /** Status reads (`GET /v1/concordance/:job_id`) so far: the polls of the job. */
  status_reads: z.int().min(0),
  /** When a status read first found the job finished (the poll that detected it); null until then. */
  first_finished_read_at: z.iso.datetime().nullable(),
});
export type SimulatorJob = z.infer<typeof SimulatorJobSchema>;

/** The simulator's `/_admin/jobs/:job_id` (throws when it does not know the job). */
export async function simulatorJob(simulatorUrl: string, jobId: string): Promise<SimulatorJob> {
  const response = await fetch(`${simulatorUrl}/_admin/jobs/${encodeURIComponent(jobId)}`, {
    headers: { 'x-admin-key': API_KEY },
  });
  if (!response.ok) throw new Error(`GET /_admin/jobs/${jobId} answered ${response.status}`);
  return SimulatorJobSchema.parse(await response.json());
}

export interface RunningWorker {
  proc: ChildProc;
  metricsUrl: string;
  stop(): Promise<void>;
}

/** Starts `concordance-worker --config <file> work` and waits for its /readyz. */
export async function startWorker(
  ctx: BenchContext,
  name: string,
  options: {
    configPath: string;
    prefix: string;
    simulatorUrl: string;
    /** More environment (e.g. `REDIS_CLUSTER_NODES`, `REDIS_PARTITIONS`). */
    env?: Record<string, string>;
  },
): Promise<RunningWorker> {
  const port = await freePort();
  const proc = cliProcess(name, ['--config', options.configPath, 'work'], {
    ...workerEnv(ctx, options.prefix, options.simulatorUrl, port),
    ...options.env,
  });
  const remove = ctx.cleanup.add(name, () => proc.stop());
  const metricsUrl = `http://127.0.0.1:${port}`;
  await waitForHttp(`${metricsUrl}/readyz`, proc);
  return {
    proc,
    metricsUrl,
    async stop() {
      await proc.stop();
      remove();
    },
  };
}

export function workerEnv(
  ctx: BenchContext,
  prefix: string,
  simulatorUrl: string,
  metricsPort: number,
): Record<string, string> {
  return {
    REDIS_URL: ctx.redis.url,
    REDIS_PREFIX: prefix,
    SERVICE_BASE_URL: simulatorUrl,
    SERVICE_API_KEY: API_KEY,
    CROSSWALK_KEY: ctx.secret,
    OUTBOUND_KEY: ctx.outboundKey,
    METRICS_PORT: String(metricsPort),
    LOG_LEVEL: ctx.logLevel,
    // e.g. BENCH_WORKER_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile the workers.
    ...(process.env.BENCH_WORKER_NODE_OPTIONS
      ? { NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS }
      : {}),
  };
}

/** The producer side in the bench process: the pipeline's own context, queue and scheduler. */
export interface Producer {
  /** The app as the composition root builds it for the bench process. */
  context: App;
  queue: Queue;
  scheduler: QueryScheduler;
  close(): Promise<void>;
}

export function producer(ctx: BenchContext, config: Config): Producer {
  const redis = workerConnection(ctx.redis.url, 'cw-bench');
  const context = App.compose(config, createLogger({ level: 'warn', name: 'bench' }), { redis });
  const queue = context.queriesQueue(redis);
  const close = async () => {
    await queue.close();
    redis.disconnect();
  };
  const remove = ctx.cleanup.add('producer', close);
  return {
    context,
    queue,
    scheduler: context.queryScheduler(),
    async close() {
      remove();
      await close();
    },
  };
}

/** Creates `count` patients (crosswalk entry and stored record); returns their service ids. */
export async function preparePatients(
  p: Producer,
  count: number,
  idPrefix: string,
): Promise<string[]> {
  const ids = new Array<string>(count);
  await forEachLimit(
    Array.from({ length: count }, (_, i) => i),
    64,
    async (i) => {
      const { patientServiceId } = await p.context.crosswalk.resolve(`${idPrefix}-${i}`);
      await p.context.records.put(patientServiceId, benchRecord(i));
      ids[i] = patientServiceId;
    },
  );
  return ids;
}

/** Schedules one query per patient (as ingest does for an update), `limit` at once. */
export async function scheduleQueries(
  p: Producer,
  patients: readonly string[],
  limit = 64,
): Promise<void> {
  const at = new Date().toISOString();
  await forEachLimit(patients, limit, async (patientServiceId, i) => {
    await p.scheduler.schedule(patientServiceId, CATEGORY, { eventId: `bench-${i}`, at });
  });
}

/** Polls `probe` every `everyMs` until it is true; rejects after `timeoutMs`. */
export async function until(
  probe: () => Promise<boolean>,
  { everyMs = 50, timeoutMs = 120_000, what = 'condition' } = {},
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return Date.now();
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
