import { newOutboundKey, OUTBOUND_QUEUE_LINES } from '../../support/outbound.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { startSimulator, type RunningSimulator } from '../../../src/simulator/start-simulator.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { eventually } from '../../support/eventually.ts';
import { sampleRecord } from '../../support/pipeline-harness.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { families, has, parseExposition, total, type Sample } from './support/exposition.ts';
import { checkMetrics, promtoolPath } from './support/promtool.ts';

const API_KEY = 'metrics-test-api-key';
const TOKEN = 'metrics-test-ingest-token-0123456789';
const PATIENT = 'PLANTED-MRN-9090';
const SOURCE = 'ehr-test';
/** Planted in the records' node metadata: records never reach a log line. */
const RECORD_MARKER = 'Planted-Record-Marker';

/** A long debounce, so that the second update surely joins the first query (coalesced). */
function configFile(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cw-metrics-')), 'config.yaml');
  writeFileSync(
    path,
    [
      'queries:',
      '  debounce_ms: 3000',
      '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }',
      ...OUTBOUND_QUEUE_LINES,
    ].join('\n'),
  );
  return path;
}

/** The `cw_` families every process exposes, with their types. */
const WORKER_FAMILIES = {
  cw_service_requests_total: 'counter',
  cw_service_request_duration_seconds: 'histogram',
  cw_polls_total: 'counter',
  cw_poll_lateness_seconds: 'histogram',
  cw_queries_finished_total: 'counter',
  cw_query_resubmissions_total: 'counter',
  cw_update_to_delivery_seconds: 'histogram',
  cw_deliveries_total: 'counter',
  cw_dead_letters_total: 'counter',
  cw_queue_jobs: 'gauge',
  cw_free_text_removed_total: 'counter',
  cw_outbound_queue_waiting: 'gauge',
  cw_outbound_queue_oldest_waiting_seconds: 'gauge',
  cw_outbound_queue_expired_total: 'counter',
};
const INGEST_FAMILIES = {
  cw_ingest_events_total: 'counter',
  cw_queries_enqueued_total: 'counter',
};

interface Scrape {
  text: string;
  samples: Sample[];
}

async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(`${url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return { text, samples: parseExposition(text) };
}

/** promtool accepts it; every family has help text; the `cw_` families and process metrics are there. */
async function expectWellFormed({ text }: Scrape, expected: Record<string, string>): Promise<void> {
  expect(await checkMetrics(text)).toEqual({ code: 0, output: '' });
  const found = families(text);
  for (const [name, type] of Object.entries(expected)) {
    expect(found.get(name), name).toEqual({ type, help: expect.stringMatching(/\S/) });
  }
  for (const [name, family] of found) expect(family.help, name).toMatch(/\S/);
  expect(found.has('process_cpu_user_seconds_total')).toBe(true);
  expect(found.has('nodejs_heap_size_used_bytes')).toBe(true);
}

type Mode = 'ingest and work' | 'start';

/**
 * An end-to-end run through real processes (`concordance-worker ingest` + `work`, or `start`)
 * against the local Clinical Graph Service; then both `/metrics` endpoints must pass
 * `promtool check metrics` and count exactly what the run did.
 */
describe.each<Mode>(['ingest and work', 'start'])('metrics of `%s`', (mode) => {
  let simulator: RunningSimulator;
  let redis: Awaited<ReturnType<typeof isolatedRedis>>;
  let results: Queue<ResultEvent>;
  const processes: CliProcess[] = [];
  let ingestUrl: string;
  let workerUrl: string;
  let ingest: Scrape;
  let worker: Scrape;

  const post = (path: string, body: unknown, method = 'POST') =>
    fetch(`${ingestUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    promtoolPath(); // fail at once, and clearly, when promtool is missing
    redis = await isolatedRedis();
    simulator = await startSimulator({
      port: 0,
      apiKeys: [API_KEY],
      latency: { minMs: 200, maxMs: 400 },
      relationshipCount: 50,
    });
    const env = {
      REDIS_URL: testRedisUrl(),
      REDIS_PREFIX: redis.prefix,
      SERVICE_BASE_URL: simulator.url,
      SERVICE_API_KEY: API_KEY,
      INGEST_TOKENS: TOKEN,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      OUTBOUND_KEY: newOutboundKey(),
      INGEST_PORT: '0',
      MLLP_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      METRICS_PORT: '0',
      LOG_LEVEL: 'debug',
    };
    const config = configFile();
    if (mode === 'start') {
      const start = new CliProcess(['--config', config, 'start'], env);
      processes.push(start);
      workerUrl = (JSON.parse(await start.waitForLine('workers started')) as { url: string }).url;
      ingestUrl = (JSON.parse(await start.waitForLine('ingest listening')) as { url: string }).url;
    } else {
      const work = new CliProcess(['--config', config, 'work'], env);
      const ingestProcess = new CliProcess(['--config', config, 'ingest'], env);
      processes.push(ingestProcess, work);
      workerUrl = (JSON.parse(await work.waitForLine('workers started')) as { url: string }).url;
      ingestUrl = (
        JSON.parse(await ingestProcess.waitForLine('ingest listening')) as { url: string }
      ).url;
    }
    results = new Queue<ResultEvent>('concordance-results', {
      connection: new Redis(testRedisUrl(), { maxRetriesPerRequest: null }),
      prefix: redis.prefix,
    });

    // The run: a preset, two updates of one patient (one query: new, then coalesced), the first
    // one again (duplicate), one refused update; then the one result.
    expect((await post(`/v1/patients/${PATIENT}/presets/END002`, undefined, 'PUT')).status).toBe(
      201,
    );
    const update = (eventId: string) => ({
      patient_id: PATIENT,
      event_id: eventId,
      source: SOURCE,
      assembled_patient: sampleRecord(`${RECORD_MARKER}-${eventId}`),
      changes: ['Condition'],
    });
    const first = await post('/v1/record-updates', update('evt-m-1'));
    expect(first.status).toBe(202);
    const second = await post('/v1/record-updates', update('evt-m-2'));
    expect(second.status).toBe(202);
    const coalesced = [first, second].map(async (r) =>
      ((await r.json()) as { queries: { coalesced: boolean }[] }).queries.map((q) => q.coalesced),
    );
    expect(await Promise.all(coalesced)).toEqual([[false], [true]]);
    expect((await post('/v1/record-updates', update('evt-m-1'))).status).toBe(200);
    expect((await post('/v1/record-updates', { event_id: 'evt-m-3', source: SOURCE })).status).toBe(
      422,
    );

    await eventually(
      async () => (await results.getJobs(['wait', 'active', 'completed'])).length,
      (n) => n === 1,
    );
    // The query's outcome is written just after its event is out: wait for the worker to say so.
    worker = await eventually(
      () => scrape(workerUrl),
      (s) => total(s.samples, 'cw_queries_finished_total', { outcome: 'completed' }) === 1,
    );
    ingest = await scrape(ingestUrl);
  });

  afterAll(async () => {
    for (const p of processes) await p.stop('SIGTERM');
    await results?.close();
    await simulator?.close();
    await redis?.cleanup();
  });

  it('serves the ingest counters on the ingest /metrics, accepted by promtool', async () => {
    await expectWellFormed(ingest, {
      ...INGEST_FAMILIES,
      ...WORKER_FAMILIES,
    });
    const s = ingest.samples;
    expect(total(s, 'cw_ingest_events_total', { source: SOURCE, outcome: 'accepted' })).toBe(2);
    expect(total(s, 'cw_ingest_events_total', { outcome: 'accepted' })).toBe(2);
    expect(total(s, 'cw_ingest_events_total', { source: SOURCE, outcome: 'duplicate' })).toBe(1);
    expect(total(s, 'cw_ingest_events_total', { source: SOURCE, outcome: 'rejected' })).toBe(1);
    expect(total(s, 'cw_ingest_events_total', { outcome: 'unavailable' })).toBe(0);
    expect(total(s, 'cw_queries_enqueued_total', { kind: 'new' })).toBe(1);
    expect(total(s, 'cw_queries_enqueued_total', { kind: 'coalesced' })).toBe(1);
    // The ingest process knows the query queue and reads its counts from Redis.
    expect(has(s, 'cw_queue_jobs', { queue: 'concordance-queries', state: 'waiting' })).toBe(true);
  });

  it('serves the worker counters on the worker /metrics, accepted by promtool', async () => {
    await expectWellFormed(worker, WORKER_FAMILIES);
    const s = worker.samples;
    const submit = { endpoint: 'POST /v1/concordance' };
    const get = { endpoint: 'GET /v1/concordance/{job_id}' };

    expect(total(s, 'cw_queries_finished_total', { outcome: 'completed' })).toBe(1);
    expect(total(s, 'cw_queries_finished_total')).toBe(1);
    expect(total(s, 'cw_service_requests_total', { ...submit, status: '202' })).toBe(1);
    expect(total(s, 'cw_service_requests_total', submit)).toBe(1);
    expect(total(s, 'cw_service_request_duration_seconds_count', submit)).toBe(1);

    // Every poll is one GET answered 200; the last one found the job done.
    const polls = total(s, 'cw_polls_total');
    expect(polls).toBeGreaterThan(0);
    expect(total(s, 'cw_polls_total', { state: 'success' })).toBe(1);
    expect(total(s, 'cw_polls_total', { state: 'pending' })).toBe(polls - 1);
    expect(total(s, 'cw_service_requests_total', { ...get, status: '200' })).toBe(polls);
    expect(total(s, 'cw_service_requests_total', get)).toBe(polls);
    expect(total(s, 'cw_service_request_duration_seconds_count', get)).toBe(polls);
    expect(total(s, 'cw_poll_lateness_seconds_count')).toBe(polls);
    expect(total(s, 'cw_query_resubmissions_total')).toBe(0);

    expect(total(s, 'cw_deliveries_total', { channel: 'queue', outcome: 'delivered' })).toBe(1);
    expect(total(s, 'cw_deliveries_total')).toBe(1);
    expect(total(s, 'cw_update_to_delivery_seconds_count', { channel: 'queue' })).toBe(1);
    expect(total(s, 'cw_dead_letters_total')).toBe(0);

    // Read from Redis at scrape time: the result waits for the hospital's consumer.
    expect(total(s, 'cw_queue_jobs', { queue: 'concordance-results', state: 'waiting' })).toBe(1);
    // The query is done: neither due set holds anything of it any more.
    expect(total(s, 'cw_due_set_queries', { set: 'submit' })).toBe(0);
    expect(total(s, 'cw_due_set_queries', { set: 'poll' })).toBe(0);
    expect(has(s, 'cw_due_set_queries', { set: 'poll', partition: '0', state: 'due' })).toBe(true);
    // The consumer lag: one event waits, and the age of the oldest is reported for it.
    expect(total(s, 'cw_outbound_queue_waiting', { queue: 'concordance-results' })).toBe(1);
    expect(
      has(s, 'cw_outbound_queue_oldest_waiting_seconds', { queue: 'concordance-results' }),
    ).toBe(true);
    expect(total(s, 'cw_outbound_queue_expired_total')).toBe(0);
  });

  it('logs JSON lines only, with the query context on every query line, and no planted identity or secret', () => {
    const lines = processes.flatMap((p) => p.lines);
    expect(lines.length).toBeGreaterThan(5);
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const queryLines = entries.filter((e) =>
      ['query submitted', 'query finished'].includes(String(e.msg)),
    );
    expect(queryLines.map((e) => e.msg)).toEqual(['query submitted', 'query finished']);
    for (const entry of queryLines) {
      expect(entry).toMatchObject({
        query_key: expect.stringMatching(/^[^/]+\/END002$/),
        job_id: expect.any(String),
        remote_job_id: expect.any(String),
        record_version: 2,
      });
    }
    const all = lines.join('\n').toLowerCase();
    for (const marker of [PATIENT, API_KEY, TOKEN, RECORD_MARKER]) {
      expect(all).not.toContain(marker.toLowerCase());
    }
  });
});
