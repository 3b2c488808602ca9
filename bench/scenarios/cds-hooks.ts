import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { stringify } from 'yaml';
import { CONCORDANCE_SERVICE_ID } from '../../src/cds/cds-services.ts';
import {
  BENCH_EHR_ISSUER,
  BENCH_MRN_SYSTEM,
  BenchEhr,
  patientViewBody,
} from '../support/cds-ehr.ts';
import { CDS_CATEGORIES, seedKeptResults } from '../support/cds-seed.ts';
import { ingestChildEnv } from '../support/ingest-child.ts';
import { benchPrefix, configFor, type BenchContext } from '../support/fixtures.ts';
import {
  cliProcess,
  clearRedis,
  freePort,
  processCpuMs,
  processMemory,
  waitForHttp,
} from '../support/processes.ts';
import { selfCpuMs } from '../support/raw-bullmq.ts';
import { MiB, round, summarize, type Summary } from '../support/stats.ts';

export interface CdsHooksSettings {
  /** Patients with kept results (2 to 4 categories each). */
  patients: number;
  /** Concurrent closed-loop callers. */
  clients: number;
  seconds: number;
  warmupSeconds: number;
}

export const DEFAULT_CDS_HOOKS: CdsHooksSettings = {
  patients: 5_000,
  clients: 50,
  seconds: 10,
  warmupSeconds: 3,
};

/** The target of issue 22: p99 of a `patient-view` call under 50 concurrent calls. */
export const CDS_HOOKS_P99_TARGET_MS = 500;

export interface CdsHooksResult {
  settings: CdsHooksSettings & { setup: string; tokens: string; latency_measured_from: string };
  /** p99 (ms) of the measured calls, each from its send to the last byte of its answer. */
  cds_hooks_p99_ms: number | null;
  target_p99_ms: number;
  calls: number;
  calls_per_s: number | null;
  /**
   * Answers: `200_cards` (200, exactly the patient's own cards), `200_no_cards`,
   * `200_wrong_cards` (a card missing or not the patient's), any other HTTP status, `error`.
   */
  statuses: Record<string, number>;
  /** True when every measured call was `200_cards`. */
  all_ok: boolean;
  latency_ms: Summary;
  cards_per_call: number | null;
  answer_bytes_mean: number | null;
  /** CPU (user + system, ms) per measured call: ingest child, redis-server, bench process. */
  cpu_ms_per_call: {
    ingest: number | null;
    redis: number | null;
    load_generator: number | null;
  };
  /** RSS of the ingest child once ready (before any call), after the run, and its peak (VmHWM). */
  ingest_rss_idle_mib: number | null;
  ingest_rss_mib: number | null;
  ingest_rss_peak_mib: number | null;
  kept: { patients: number; results: number; seconds: number | null };
  jwt: {
    signed_ahead: number;
    signed_in_loop: number;
    sign_ms_per_token: number | null;
    /** A token of the run presented again after it: the replay guard's answer (401 expected). */
    replayed_token_status: number | null;
  };
}

const TOKEN = 'bench-cds-ingest-token-0123456789abcdef';
const BASE_URL = 'https://cds.bench.example.test';
/** The most JWTs signed ahead; a longer run signs the rest in its loop (`signed_in_loop`). */
const MAX_AHEAD = 60_000;
const UUIDS = /"uuid":"([^"]+)"/g;

const perCall = (ms: number | null | undefined, calls: number): number | null =>
  ms === null || ms === undefined || calls === 0 ? null : round(ms / calls, 4);

/** What an answer was, for {@link CdsHooksResult.statuses}. */
function outcomeOf(status: number, body: string, expected: Set<string> | undefined): string {
  if (status !== 200) return String(status);
  const uuids = Array.from(body.matchAll(UUIDS), (m) => m[1]);
  if (uuids.length === 0) return '200_no_cards';
  const own = expected !== undefined && uuids.every((uuid) => expected.has(uuid as string));
  return own && uuids.length === expected.size ? '200_cards' : '200_wrong_cards';
}

/**
 * `patient-view` calls answered per second, and their latency, by one `concordance-worker ingest`
 * child with the CDS Hooks service on: `clients` closed-loop callers, each call for a random one of
 * `patients` patients whose kept results were written beforehand, with a fresh ES384 JWT.
 */
export async function cdsHooksScenario(
  ctx: BenchContext,
  settings: CdsHooksSettings,
): Promise<CdsHooksResult> {
  const prefix = benchPrefix(ctx, 'cds-hooks');
  const audience = `${BASE_URL}/cds-services/${CONCORDANCE_SERVICE_ID}`;
  const ehr = await BenchEhr.create(audience);
  const configPath = join(ctx.tmpDir, 'cds-hooks.yaml');
  writeFileSync(
    configPath,
    stringify({
      cds_hooks: { clients: [{ issuer: BENCH_EHR_ISSUER, jwks: { keys: [ehr.jwk] } }] },
    }),
  );
  const port = await freePort();
  const env = {
    ...ingestChildEnv(ctx, { prefix, token: TOKEN, port }),
    CDS_HOOKS_ENABLED: 'true',
    CDS_HOOKS_BASE_URL: BASE_URL,
    MRN_FHIR_SYSTEMS: BENCH_MRN_SYSTEM,
  };
  const mrns = Array.from({ length: settings.patients }, (_, i) => `BENCH-CDS-${i}`);
  const bodies = mrns.map((mrn, i) => patientViewBody(`bench-fhir-${i}`, mrn));

  ctx.say(`cds_hooks: keeping the results of ${settings.patients} patients`);
  const seed = await seedKeptResults(ctx, configFor(configPath, env), mrns);

  const proc = cliProcess('cds-hooks-ingest', ['--config', configPath, 'ingest'], env);
  const remove = ctx.cleanup.add('cds-hooks-ingest', () => proc.stop());
  const pool = new Pool(`http://127.0.0.1:${port}`, {
    connections: settings.clients,
    pipelining: 1,
  });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, proc);
    const idle = processMemory(proc.pid);
    const call = async (
      token: string,
      i: number,
    ): Promise<{ outcome: string; cards: number; bytes: number }> => {
      const { statusCode, body } = await pool.request({
        method: 'POST',
        path: `/cds-services/${CONCORDANCE_SERVICE_ID}`,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: bodies[i],
      });
      const text = await body.text();
      const expected = seed.cardIds[i];
      const outcome = outcomeOf(statusCode, text, expected);
      return {
        outcome,
        cards: outcome === '200_cards' ? (expected?.size ?? 0) : 0,
        bytes: text.length,
      };
    };

    const tokens: string[] = [];
    let signedInLoop = 0;
    let lastToken = '';
    const loop = async (seconds: number) => {
      const statuses: Record<string, number> = {};
      const latencies: number[] = [];
      let cards = 0;
      let bytes = 0;
      const start = performance.now();
      const deadline = start + seconds * 1_000;
      await Promise.all(
        Array.from({ length: settings.clients }, async () => {
          while (performance.now() < deadline) {
            let token = tokens.pop();
            if (token === undefined) {
              token = await ehr.sign();
              signedInLoop++;
            }
            lastToken = token;
            const i = Math.floor(Math.random() * settings.patients);
            const sent = performance.now();
            const answer = await call(token, i).catch(() => ({
              outcome: 'error',
              cards: 0,
              bytes: 0,
            }));
            latencies.push(performance.now() - sent);
            statuses[answer.outcome] = (statuses[answer.outcome] ?? 0) + 1;
            cards += answer.cards;
            bytes += answer.bytes;
          }
        }),
      );
      return { statuses, latencies, cards, bytes, elapsed: (performance.now() - start) / 1_000 };
    };

    // The warm-up signs its tokens in the loop and tells the rate; the measured run's tokens are
    // signed ahead (three times what that rate needs, as the warm-up's own signing slows it), so
    // that signing costs the measured run nothing.
    ctx.say(`cds_hooks: warm-up ${settings.warmupSeconds} s, ${settings.clients} callers`);
    const warm = await loop(settings.warmupSeconds);
    if (Object.keys(warm.statuses).some((s) => s !== '200_cards')) {
      throw new Error(`cds_hooks: the warm-up was not all cards: ${JSON.stringify(warm.statuses)}`);
    }
    const warmRate = warm.latencies.length / warm.elapsed;
    // At most MAX_AHEAD (about 40 s of signing): every token is then used well before its `exp`.
    const ahead = Math.min(
      MAX_AHEAD,
      Math.ceil(warmRate * settings.seconds * 3) + 10 * settings.clients,
    );
    ctx.say(`cds_hooks: signing ${ahead} JWTs ahead (warm-up ${Math.round(warmRate)} calls/s)`);
    const signedBefore = { count: ehr.signed, ms: ehr.signMs };
    tokens.push(...(await ehr.signAhead(ahead)));
    const signMsPerToken = (ehr.signMs - signedBefore.ms) / (ehr.signed - signedBefore.count);
    signedInLoop = 0;

    ctx.say(`cds_hooks: ${settings.clients} callers for ${settings.seconds} s`);
    const self = process.cpuUsage();
    const before = [processCpuMs(proc.pid), processCpuMs(ctx.redis.pid)];
    const run = await loop(settings.seconds);
    const after = [processCpuMs(proc.pid), processCpuMs(ctx.redis.pid)];
    const selfMs = selfCpuMs(self);
    const memory = processMemory(proc.pid);
    const cpu = (k: number) => {
      const [was, now] = [before[k], after[k]];
      return was === undefined || now === undefined ? null : now - was;
    };
    const replayed = await pool
      .request({
        method: 'POST',
        path: `/cds-services/${CONCORDANCE_SERVICE_ID}`,
        headers: { authorization: `Bearer ${lastToken}`, 'content-type': 'application/json' },
        body: bodies[0],
      })
      .then(
        async ({ statusCode, body }) => {
          await body.dump();
          return statusCode;
        },
        () => null,
      );

    const calls = run.latencies.length;
    const latency = summarize(run.latencies);
    const ok = run.statuses['200_cards'] ?? 0;
    return {
      settings: {
        ...settings,
        setup:
          `one \`concordance-worker ingest\` child process (LOG_LEVEL ${ctx.logLevel}) with cds_hooks on, ` +
          `one client with an inline JWKS (ES384), identity by MRN identifier (MRN_FHIR_SYSTEMS); ` +
          `${settings.patients} patients, each with 2-4 kept results of ${CDS_CATEGORIES.join('/')} ` +
          `(the simulator's concordance objects) written beforehand through KeptResults.keep; ` +
          `POST /cds-services/${CONCORDANCE_SERVICE_ID} (patient-view, prefetch.patient) for a random ` +
          `patient from the bench process over an undici Pool of ${settings.clients} keep-alive connections ` +
          `(same machine); ${settings.warmupSeconds} s warm-up first`,
        tokens:
          'one fresh ES384 JWT per call (new jti, exp +120 s), signed with jose in the bench process: ' +
          'in the loop during the warm-up, ahead of time for the measured run (in the loop only if those ran out: signed_in_loop)',
        latency_measured_from:
          'the send of the request (token already signed) to the last byte of the answer',
      },
      cds_hooks_p99_ms: latency.p99,
      target_p99_ms: CDS_HOOKS_P99_TARGET_MS,
      calls,
      calls_per_s: run.elapsed === 0 ? null : round(calls / run.elapsed, 0),
      statuses: run.statuses,
      all_ok: calls > 0 && ok === calls,
      latency_ms: latency,
      cards_per_call: ok === 0 ? null : round(run.cards / ok, 2),
      answer_bytes_mean: calls === 0 ? null : round(run.bytes / calls, 0),
      cpu_ms_per_call: {
        ingest: perCall(cpu(0), calls),
        redis: perCall(cpu(1), calls),
        load_generator: perCall(selfMs, calls),
      },
      ingest_rss_idle_mib: idle === undefined ? null : round(idle.rss / MiB, 1),
      ingest_rss_mib: memory === undefined ? null : round(memory.rss / MiB, 1),
      ingest_rss_peak_mib: memory === undefined ? null : round(memory.peak / MiB, 1),
      kept: { patients: settings.patients, results: seed.results, seconds: round(seed.seconds, 1) },
      jwt: {
        signed_ahead: ahead,
        signed_in_loop: signedInLoop,
        sign_ms_per_token: round(signMsPerToken, 3),
        replayed_token_status: replayed,
      },
    };
  } finally {
    await pool.close();
    await proc.stop();
    remove();
    await clearRedis(ctx.redis, prefix);
  }
}
