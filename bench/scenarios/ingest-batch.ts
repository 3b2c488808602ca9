import { performance } from 'node:perf_hooks';
import {
  benchPrefix,
  benchRecord,
  CATEGORY,
  forEachLimit,
  type BenchContext,
} from '../support/fixtures.ts';
import { PoolClient } from '../support/http-client.ts';
import {
  cliProcess,
  clearRedis,
  freePort,
  processCpuMs,
  processMemory,
  waitForHttp,
} from '../support/processes.ts';
import { rawAddLoop, selfCpuMs, type RawAddResult } from '../support/raw-bullmq.ts';
import { MiB, round, summarize, type Summary } from '../support/stats.ts';

export interface IngestBatchSettings {
  patients: number;
  /** Updates per batch request, and jobs per `addBulk` call of the baseline. */
  batchSize: number;
  /** Batch requests (and `addBulk` calls) in flight at once. */
  concurrency: number;
  seconds: number;
  warmupSeconds: number;
}

export const DEFAULT_INGEST_BATCH: IngestBatchSettings = {
  patients: 300,
  batchSize: 100,
  concurrency: 4,
  seconds: 10,
  warmupSeconds: 3,
};

export interface IngestBatchResult {
  settings: IngestBatchSettings & { setup: string };
  batch: {
    /** Items answered 202 per second (each durable before its batch's answer). */
    updates_per_s: number | null;
    requests: number;
    statuses: Record<string, number>;
    /** Per batch request, send to answer. */
    request_latency_ms: Summary;
    /**
     * CPU (user + system, ms) per update of the ingest child, of redis-server (null with a shared
     * Redis) and of the bench process (the load generator).
     */
    cpu_ms_per_update: {
      ingest: number | null;
      redis: number | null;
      load_generator: number | null;
    };
  };
  raw_addbulk: RawAddResult;
  /** `batch.updates_per_s` ÷ `raw_addbulk.jobs_per_s`. */
  ratio_to_raw_addbulk: number | null;
  ingest_rss_mib: number | null;
}

const TOKEN = 'bench-ingest-batch-token-0123456789';

/**
 * Record updates per second through `POST /v1/record-updates/batch` (JSON arrays of `batchSize`
 * updates, `concurrency` requests in flight, each answered once all its updates are durable)
 * against bare BullMQ `addBulk` of as many jobs per call with as many calls in flight, same
 * Redis, same run. Every patient has a preset, so each update stores the record and opens or
 * joins a query; no worker runs.
 */
export async function ingestBatchScenario(
  ctx: BenchContext,
  settings: IngestBatchSettings,
): Promise<IngestBatchResult> {
  const prefix = benchPrefix(ctx, 'ingest-batch');
  const port = await freePort();
  const proc = cliProcess('ingest (batch)', ['ingest'], {
    REDIS_URL: ctx.redis.url,
    REDIS_PREFIX: prefix,
    INGEST_TOKENS: TOKEN,
    CROSSWALK_KEY: ctx.secret,
    INGEST_PORT: String(port),
    MLLP_PORT: '0',
    INGEST_HOST: '127.0.0.1',
    METRICS_PORT: '0',
    LOG_LEVEL: ctx.logLevel,
  });
  const removeProc = ctx.cleanup.add('ingest (batch)', () => proc.stop());
  const client = new PoolClient('127.0.0.1', port, { authorization: `Bearer ${TOKEN}` });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, proc);
    ctx.say(`ingest_batch: registering ${settings.patients} presets`);
    const patients = Array.from({ length: settings.patients }, (_, i) => `BENCH-BATCH-${i}`);
    await forEachLimit(patients, 16, async (id) => {
      const status = await client.send('PUT', `/v1/patients/${id}/presets/${CATEGORY}`);
      if (status !== 201 && status !== 200) throw new Error(`preset PUT answered ${status}`);
    });

    const records = patients.map((_, i) => JSON.stringify(benchRecord(i)));
    const itemOf = (i: number) => {
      const p = i % patients.length;
      return `{"patient_id":"${patients[p]}","event_id":"bench-batch-${i}","changes":["Condition"],"assembled_patient":${records[p]}}`;
    };
    let seq = 0;
    const batchBody = () => {
      const items: string[] = [];
      for (let j = 0; j < settings.batchSize; j++) items.push(itemOf(seq++));
      return `[${items.join(',')}]`;
    };

    const run = async (seconds: number) => {
      const latencies: number[] = [];
      const statuses: Record<string, number> = {};
      let accepted = 0;
      const start = performance.now();
      const deadline = start + seconds * 1_000;
      await Promise.all(
        Array.from({ length: settings.concurrency }, async () => {
          while (performance.now() < deadline) {
            const body = batchBody();
            const sent = performance.now();
            const status = await client
              .send('POST', '/v1/record-updates/batch', body)
              .catch(() => 'error' as const);
            latencies.push(performance.now() - sent);
            statuses[status] = (statuses[status] ?? 0) + 1;
            if (status === 202) accepted += settings.batchSize;
          }
        }),
      );
      return { latencies, statuses, accepted, elapsed: (performance.now() - start) / 1_000 };
    };

    ctx.say(`ingest_batch: warm-up ${settings.warmupSeconds} s`);
    const warm = await run(settings.warmupSeconds);
    if (Object.keys(warm.statuses).some((status) => status !== '202')) {
      throw new Error(
        `ingest_batch: the bench batch was not accepted: ${JSON.stringify(warm.statuses)}`,
      );
    }
    ctx.say(
      `ingest_batch: ${settings.concurrency} batches of ${settings.batchSize} in flight for ${settings.seconds} s`,
    );
    const self = process.cpuUsage();
    const cpuBefore = [processCpuMs(proc.pid), processCpuMs(ctx.redis.pid)];
    const measured = await run(settings.seconds);
    const cpuAfter = [processCpuMs(proc.pid), processCpuMs(ctx.redis.pid)];
    const loadGeneratorMs = selfCpuMs(self);
    const rss = processMemory(proc.pid);
    const perUpdate = (i: number) => {
      const [before, after] = [cpuBefore[i], cpuAfter[i]];
      if (before === undefined || after === undefined || measured.accepted === 0) return null;
      return round((after - before) / measured.accepted, 4);
    };
    const updatesPerS = round(measured.accepted / measured.elapsed, 0);

    ctx.say(
      `ingest_batch: raw BullMQ addBulk of ${settings.batchSize}, ${settings.concurrency} in flight for ${settings.seconds} s`,
    );
    const raw = await rawAddLoop(ctx, {
      prefix: benchPrefix(ctx, 'raw-addbulk'),
      concurrency: settings.concurrency,
      seconds: settings.seconds,
      jobsPerCall: settings.batchSize,
      warmupSeconds: settings.warmupSeconds,
      data: (i) => JSON.parse(itemOf(i)) as object,
    });
    return {
      settings: {
        ...settings,
        setup:
          'one `concordance-worker ingest` child process (LOG_LEVEL ' +
          ctx.logLevel +
          '); load from the bench process over an undici Pool (keep-alive) (same 2-core machine); ' +
          `JSON arrays of ${settings.batchSize} updates, ${settings.concurrency} requests in flight; ` +
          `${settings.patients} patients with preset ${CATEGORY}; each update carries a ~1 KB assembled_patient, ` +
          'a new event_id and changes [Condition]; no worker running',
      },
      batch: {
        updates_per_s: updatesPerS,
        requests: measured.latencies.length,
        statuses: measured.statuses,
        request_latency_ms: summarize(measured.latencies),
        cpu_ms_per_update: {
          ingest: perUpdate(0),
          redis: perUpdate(1),
          load_generator:
            measured.accepted === 0 ? null : round(loadGeneratorMs / measured.accepted, 4),
        },
      },
      raw_addbulk: raw,
      ratio_to_raw_addbulk:
        updatesPerS === null || raw.jobs_per_s === null || raw.jobs_per_s === 0
          ? null
          : round(updatesPerS / raw.jobs_per_s, 3),
      ingest_rss_mib: rss === undefined ? null : round(rss.rss / MiB, 1),
    };
  } finally {
    await client.close();
    await proc.stop();
    removeProc();
    await clearRedis(ctx.redis, prefix);
  }
}
