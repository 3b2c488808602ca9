import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { benchPrefix, CATEGORY, type BenchContext } from '../support/fixtures.ts';
import { ingestChildSetup, startIngestChild, updateBodyOf } from '../support/ingest-child.ts';
import { processMemory } from '../support/processes.ts';
import { httpFloorLoop, type HttpFloorResult } from '../support/http-floor.ts';
import { closedLoopOf, perItem, type ClosedLoopTotals } from '../support/closed-loop.ts';
import { interleave, rawAddLoop, type RawAddResult } from '../support/raw-bullmq.ts';
import { MiB, round, summarize, type Summary } from '../support/stats.ts';

export interface IngestSettings {
  patients: number;
  openLoopRate: number;
  openLoopSeconds: number;
  closedLoopClients: number;
  closedLoopSeconds: number;
  warmupSeconds: number;
}

export const DEFAULT_INGEST: IngestSettings = {
  patients: 300,
  openLoopRate: 1_000,
  openLoopSeconds: 10,
  closedLoopClients: 32,
  closedLoopSeconds: 10,
  warmupSeconds: 3,
};

export interface IngestResult {
  settings: IngestSettings & { setup: string; latency_measured_from: string };
  open_loop: {
    offered_per_s: number;
    achieved_per_s: number | null;
    sent: number;
    statuses: Record<string, number>;
    latency_ms: Summary;
    /** How far behind its schedule the load generator sent (its own accuracy). */
    send_lag_ms: Summary;
  };
  closed_loop: {
    clients: number;
    accepted_per_s: number | null;
    completed: number;
    statuses: Record<string, number>;
    latency_ms: Summary;
    /**
     * CPU (user + system, ms) per accepted update of the ingest child, of redis-server (null with a
     * shared Redis) and of the bench process (the HTTP load generator).
     */
    cpu_ms_per_update: {
      ingest: number | null;
      redis: number | null;
      load_generator: number | null;
    };
  };
  /**
   * The closed loop (`clients` HTTP updates in flight, each durable before its 202) against bare
   * BullMQ `queue.add` with as many calls in flight, same Redis, same run.
   */
  vs_raw_add: {
    clients: number;
    ingest_per_s: number | null;
    ingest_p99_ms: number | null;
    raw_add: RawAddResult;
    /** `ingest_per_s` ÷ `raw_add.jobs_per_s`. */
    ratio: number | null;
    /**
     * A bare node:http server (reads the body, answers 202, nothing else) with the same client and
     * load: the most any HTTP ingest can reach here. `http_floor_ratio` is its rate ÷ raw `add`.
     */
    http_floor: HttpFloorResult;
    http_floor_ratio: number | null;
  };
  ingest_rss_mib: number | null;
}

const TOKEN = 'bench-ingest-token-0123456789abcdef';

const ratioOf = (a: number | null, b: number | null): number | null =>
  a === null || b === null || b === 0 ? null : round(a / b, 3);

function countStatus(statuses: Record<string, number>, status: number | string): void {
  statuses[status] = (statuses[status] ?? 0) + 1;
}

/**
 * Record updates accepted per second by one `concordance-worker ingest` process. Every patient has
 * a preset, so each update stores the record and schedules (or joins) a query; no worker runs.
 */
export async function ingestScenario(
  ctx: BenchContext,
  settings: IngestSettings,
): Promise<IngestResult> {
  const ingest = await startIngestChild(ctx, {
    name: 'ingest',
    token: TOKEN,
    idPrefix: 'BENCH-MRN',
    count: settings.patients,
  });
  const { patients, proc, client } = ingest;
  try {
    let seq = 0;
    const bodyOf = updateBodyOf(patients, 'bench-ev');
    const updateOf = (i: number) => JSON.parse(bodyOf(i)) as object;
    const body = () => bodyOf(seq++);
    const post = () => client.send('POST', '/v1/record-updates', body());

    ctx.say(`ingest: warm-up ${settings.warmupSeconds} s`);
    await closedLoopOf(post, { clients: 8, pids: [] }).run(settings.warmupSeconds, true);

    ctx.say(`ingest: open loop ${settings.openLoopRate}/s for ${settings.openLoopSeconds} s`);
    const total = settings.openLoopRate * settings.openLoopSeconds;
    const interval = 1_000 / settings.openLoopRate;
    const openLatencies: number[] = [];
    const sendLags: number[] = [];
    const openStatuses: Record<string, number> = {};
    const inFlight: Promise<void>[] = [];
    const start = performance.now() + 20;
    let lastDone = start;
    for (let i = 0; i < total;) {
      const now = performance.now();
      while (i < total && start + i * interval <= now) {
        const due = start + i * interval;
        sendLags.push(now - due);
        inFlight.push(
          post().then(
            (status) => {
              lastDone = performance.now();
              openLatencies.push(lastDone - due);
              countStatus(openStatuses, status);
            },
            () => countStatus(openStatuses, 'error'),
          ),
        );
        i++;
      }
      const wait = start + i * interval - performance.now();
      await sleep(Math.max(0, wait));
    }
    await Promise.all(inFlight);
    const openElapsed = (lastDone - start) / 1_000;

    await sleep(500);
    // The closed loop, the bare HTTP server and raw BullMQ adds, each warmed up, then measured in
    // interleaved slices so that all three see the same machine.
    const ingestLoop = closedLoopOf(post, {
      clients: settings.closedLoopClients,
      pids: [proc.pid, ctx.redis.pid],
    });
    const floor = await httpFloorLoop(ctx, { clients: settings.closedLoopClients, body: bodyOf });
    const raw = await rawAddLoop(ctx, {
      prefix: benchPrefix(ctx, 'raw-add'),
      concurrency: settings.closedLoopClients,
      jobsPerCall: 1,
      data: (i) => updateOf(i),
    });
    let closed: ClosedLoopTotals;
    let floorResult: HttpFloorResult;
    let rawAdd: RawAddResult;
    try {
      await floor.run(settings.warmupSeconds, true);
      await raw.run(settings.warmupSeconds, true);
      const rounds = Math.min(5, settings.closedLoopSeconds);
      ctx.say(
        `ingest: closed loop of ${settings.closedLoopClients} clients, bare node:http server, raw ` +
          `BullMQ queue.add: ${settings.closedLoopSeconds} s each, in ${rounds} interleaved slices`,
      );
      await interleave([ingestLoop, floor, raw], settings.closedLoopSeconds, rounds);
      closed = ingestLoop.result();
      floorResult = floor.result();
      rawAdd = raw.result();
    } finally {
      await floor.close();
      await raw.close();
    }
    const rss = processMemory(proc.pid);
    const accepted = closed.accepted;
    const acceptedPerS = closed.elapsed === 0 ? null : round(accepted / closed.elapsed, 0);
    const closedLatency = summarize(closed.latencies);

    return {
      settings: {
        ...settings,
        setup: ingestChildSetup(
          ctx,
          'load from the bench process over an undici Pool (keep-alive) (same 2-core machine); ' +
            `${settings.patients} patients with preset ${CATEGORY}; each update carries a ~1 KB assembled_patient, a new event_id ` +
            'and changes [Condition]: it stores the record, checks idempotency and schedules/joins the patient query; no worker running',
        ),
        latency_measured_from:
          'open loop: the scheduled send time (so a stalled generator or server counts against latency); closed loop: the actual send time',
      },
      open_loop: {
        offered_per_s: settings.openLoopRate,
        achieved_per_s: round(openLatencies.length / openElapsed, 0),
        sent: total,
        statuses: openStatuses,
        latency_ms: summarize(openLatencies),
        send_lag_ms: summarize(sendLags),
      },
      closed_loop: {
        clients: settings.closedLoopClients,
        accepted_per_s: acceptedPerS,
        completed: closed.latencies.length,
        statuses: closed.statuses,
        latency_ms: closedLatency,
        cpu_ms_per_update: {
          ingest: perItem(closed.cpuMs[0], accepted),
          redis: perItem(closed.cpuMs[1], accepted),
          load_generator: perItem(closed.selfMs, accepted),
        },
      },
      vs_raw_add: {
        clients: settings.closedLoopClients,
        ingest_per_s: acceptedPerS,
        ingest_p99_ms: closedLatency.p99,
        raw_add: rawAdd,
        ratio: ratioOf(acceptedPerS, rawAdd.jobs_per_s),
        http_floor: floorResult,
        http_floor_ratio: ratioOf(floorResult.requests_per_s, rawAdd.jobs_per_s),
      },
      ingest_rss_mib: rss === undefined ? null : round(rss.rss / MiB, 1),
    };
  } finally {
    await ingest.close();
  }
}
