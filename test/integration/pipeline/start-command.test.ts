import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultEvent } from '../../../src/delivery/result-event.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { eventually } from '../../support/eventually.ts';
import { sampleRecord } from '../../support/pipeline-harness.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';

const API_KEY = 'start-test-api-key';
const TOKEN = 'start-test-ingest-token-0123456789';
const PLANTED_ID = 'PLANTED-MRN-4711';
const PLANTED_NAME = 'Zyxwvuts Plantedname';

function fastConfig(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cw-start-')), 'config.yaml');
  writeFileSync(
    path,
    [
      'queries:',
      '  debounce_ms: 200',
      '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }',
    ].join('\n'),
  );
  return path;
}

/**
 * `concordance-worker simulator` and `concordance-worker start` as separate processes, configured
 * only through the environment (as the README shows), driven over HTTP.
 */
describe('concordance-worker start against concordance-worker simulator', () => {
  let simulator: CliProcess;
  let start: CliProcess;
  let simulatorUrl: string;
  let ingestUrl: string;
  let redis: Awaited<ReturnType<typeof isolatedRedis>>;
  let results: Queue<ResultEvent>;

  beforeAll(async () => {
    redis = await isolatedRedis();
    simulator = new CliProcess(
      ['simulator', '--port', '0', '--api-key', API_KEY, '--latency', '300-600'],
      {},
    );
    simulatorUrl =
      /listening on (\S+)/.exec(await simulator.waitForLine('listening on'))?.[1] ?? '';
    start = new CliProcess(['--config', fastConfig(), 'start'], {
      REDIS_URL: testRedisUrl(),
      REDIS_PREFIX: redis.prefix,
      SERVICE_BASE_URL: simulatorUrl,
      SERVICE_API_KEY: API_KEY,
      INGEST_TOKENS: TOKEN,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      INGEST_PORT: '0',
      MLLP_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      METRICS_PORT: '0',
      LOG_LEVEL: 'trace',
    });
    const listening = JSON.parse(await start.waitForLine('ingest listening')) as { url: string };
    ingestUrl = listening.url;
    results = new Queue<ResultEvent>('concordance-results', {
      connection: new Redis(testRedisUrl(), { maxRetriesPerRequest: null }),
      prefix: redis.prefix,
    });
  });

  afterAll(async () => {
    await start.stop('SIGTERM');
    await simulator.stop('SIGTERM');
    await results.close();
    await redis.cleanup();
  });

  const post = (path: string, body: unknown, method = 'POST') =>
    fetch(`${ingestUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  const delivered = async () =>
    (await results.getJobs(['wait', 'active', 'completed'])).map((job) => job.data);

  it('runs a registered preset end to end, keeps identities out of the service and the logs, and stops cleanly', async () => {
    expect((await post(`/v1/patients/${PLANTED_ID}/presets/END002`, undefined, 'PUT')).status).toBe(
      201,
    );

    // A name in the demographics (dropped before sending), and the local id planted in a
    // free-text field of a second patient's record (refused before sending).
    const clean = sampleRecord('clean');
    const withName = {
      ...clean,
      demographics: { ...clean.demographics, name: PLANTED_NAME },
    };
    const accepted = await post('/v1/record-updates', {
      patient_id: PLANTED_ID,
      event_id: 'evt-start-1',
      source: 'test',
      assembled_patient: withName,
      changes: ['Condition'],
    });
    expect(accepted.status).toBe(202);
    const answer = (await accepted.json()) as {
      patient_service_id: string;
      queries: { ccsr_category: string; job_id: string; coalesced: boolean }[];
    };
    expect(answer.queries).toEqual([
      { ccsr_category: 'END002', job_id: expect.any(String), coalesced: false },
    ]);

    const leaky = await post('/v1/record-updates', {
      patient_id: 'PLANTED-MRN-4712',
      event_id: 'evt-start-2',
      assembled_patient: {
        ...clean,
        nodes: [{ ...clean.nodes[0], metadata: { note: 'seen as planted-mrn-4712 in clinic' } }],
        relationships: [],
      },
      ccsr_categories: ['CIR007'],
    });
    expect(leaky.status).toBe(202);

    const events = await eventually(delivered, (e) => e.length === 2, { timeoutMs: 30_000 });
    const byPatient = Object.fromEntries(events.map((e) => [e.patient_id, e]));
    expect(byPatient[PLANTED_ID]).toMatchObject({
      type: 'concordance.completed',
      patient_service_id: answer.patient_service_id,
      ccsr_category: 'END002',
      record_version: 1,
      triggered_by: { event_ids: ['evt-start-1'] },
    });
    expect(byPatient['PLANTED-MRN-4712']).toMatchObject({
      type: 'concordance.failed',
      status: 'rejected',
      error: { code: 'ERR_IDENTIFIER_LEAK' },
      remote_job_id: null,
    });

    const requests = (await (
      await fetch(`${simulatorUrl}/_admin/requests`, { headers: { 'x-admin-key': API_KEY } })
    ).json()) as { method: string; path: string; body: unknown }[];
    const submissions = requests.filter((r) => r.method === 'POST' && r.path === '/v1/concordance');
    expect(submissions).toHaveLength(1);
    const sent = JSON.stringify(requests);
    for (const marker of [PLANTED_ID, PLANTED_NAME, 'PLANTED-MRN-4712', 'Plantedname']) {
      expect(sent.toLowerCase()).not.toContain(marker.toLowerCase());
    }
    expect(JSON.stringify(submissions[0]?.body)).toContain('"ccsr_category":"END002"');

    const health = JSON.parse(await start.waitForLine('workers started')) as { url: string };
    expect((await fetch(`${health.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${health.url}/readyz`)).status).toBe(200);
    expect(await (await fetch(`${health.url}/metrics`)).text()).toContain('process_cpu');
    expect((await fetch(`${ingestUrl}/readyz`)).status).toBe(200);

    expect(await start.stop('SIGTERM')).toBe(0);
    expect(start.lines.some((l) => l.includes('workers stopped'))).toBe(true);
    const logs = [...start.lines, ...simulator.lines].join('\n').toLowerCase();
    expect(start.lines.length).toBeGreaterThan(10);
    for (const marker of [
      PLANTED_ID,
      PLANTED_NAME,
      'planted-mrn-4712',
      'plantedname',
      API_KEY,
      TOKEN,
    ]) {
      expect(logs).not.toContain(marker.toLowerCase());
    }
  });
});
