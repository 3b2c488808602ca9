import { benchPrefix, CATEGORY, type BenchContext } from '../support/fixtures.ts';
import { ingestChildSetup, startIngestChild, updateBodyOf } from '../support/ingest-child.ts';
import { processMemory } from '../support/processes.ts';
import { closedLoopOf, perItem, type ClosedLoopTotals } from '../support/closed-loop.ts';
import { interleave, rawAddLoop, type RawAddResult } from '../support/raw-bullmq.ts';
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
  const ingest = await startIngestChild(ctx, {
    name: 'ingest_batch',
    token: TOKEN,
    idPrefix: 'BENCH-BATCH',
    count: settings.patients,
  });
  const { patients, proc, client } = ingest;
  try {
    const itemOf = updateBodyOf(patients, 'bench-batch');
    let seq = 0;
    const batchBody = () => {
      const items: string[] = [];
      for (let j = 0; j < settings.batchSize; j++) items.push(itemOf(seq++));
      return `[${items.join(',')}]`;
    };

    const post = () => client.send('POST', '/v1/record-updates/batch', batchBody());
    const batches = closedLoopOf(post, {
      clients: settings.concurrency,
      pids: [proc.pid, ctx.redis.pid],
      itemsPerRequest: settings.batchSize,
    });
    const raw = await rawAddLoop(ctx, {
      prefix: benchPrefix(ctx, 'raw-addbulk'),
      concurrency: settings.concurrency,
      jobsPerCall: settings.batchSize,
      data: (i) => JSON.parse(itemOf(i)) as object,
    });
    let measured: ClosedLoopTotals;
    let rawAddBulk: RawAddResult;
    try {
      ctx.say(`ingest_batch: warm-up ${settings.warmupSeconds} s (batches, then raw addBulk)`);
      await batches.run(settings.warmupSeconds, true);
      await raw.run(settings.warmupSeconds, true);
      const rounds = Math.min(5, settings.seconds);
      ctx.say(
        `ingest_batch: ${settings.concurrency} batches of ${settings.batchSize} in flight, and raw ` +
          `BullMQ addBulk alike: ${settings.seconds} s each, in ${rounds} interleaved slices`,
      );
      await interleave([batches, raw], settings.seconds, rounds);
      measured = batches.result();
      rawAddBulk = raw.result();
    } finally {
      await raw.close();
    }
    const rss = processMemory(proc.pid);
    const updatesPerS =
      measured.elapsed === 0 ? null : round(measured.accepted / measured.elapsed, 0);
    return {
      settings: {
        ...settings,
        setup: ingestChildSetup(
          ctx,
          'load from the bench process over an undici Pool (keep-alive) (same 2-core machine); ' +
            `JSON arrays of ${settings.batchSize} updates, ${settings.concurrency} requests in flight; ` +
            `${settings.patients} patients with preset ${CATEGORY}; each update carries a ~1 KB assembled_patient, ` +
            'a new event_id and changes [Condition]; no worker running',
        ),
      },
      batch: {
        updates_per_s: updatesPerS,
        requests: measured.latencies.length,
        statuses: measured.statuses,
        request_latency_ms: summarize(measured.latencies),
        cpu_ms_per_update: {
          ingest: perItem(measured.cpuMs[0], measured.accepted),
          redis: perItem(measured.cpuMs[1], measured.accepted),
          load_generator: perItem(measured.selfMs, measured.accepted),
        },
      },
      raw_addbulk: rawAddBulk,
      ratio_to_raw_addbulk:
        updatesPerS === null || rawAddBulk.jobs_per_s === null || rawAddBulk.jobs_per_s === 0
          ? null
          : round(updatesPerS / rawAddBulk.jobs_per_s, 3),
      ingest_rss_mib: rss === undefined ? null : round(rss.rss / MiB, 1),
    };
  } finally {
    await ingest.close();
  }
}
