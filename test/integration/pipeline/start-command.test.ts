import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.ts';
import { sampleRecord } from '../../support/pipeline-harness.ts';
import {
  startPipelineProcesses,
  type PipelineProcesses,
} from '../../support/pipeline-processes.ts';

const API_KEY = 'start-test-api-key';
const TOKEN = 'start-test-ingest-token-0123456789';
const PLANTED_ID = 'PLANTED-MRN-4711';
const PLANTED_NAME = 'Zyxwvuts Plantedname';

/**
 * `concordance-worker simulator` and `concordance-worker start` as separate processes, configured
 * only through the environment (as the README shows), driven over HTTP.
 */
describe('concordance-worker start against concordance-worker simulator', () => {
  let p: PipelineProcesses;
  let ingestUrl: string;

  beforeAll(async () => {
    p = await startPipelineProcesses({
      apiKey: API_KEY,
      token: TOKEN,
      latency: '300-600',
      configLines: [
        'queries:',
        '  debounce_ms: 200',
        '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }',
      ],
    });
    ingestUrl = p.ingestUrl;
  });
  afterAll(() => p.close());

  const post = (path: string, body: unknown, method = 'POST') =>
    fetch(`${ingestUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

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
        // A note is removed before sending; a value is sent, and holds the local id.
        nodes: [
          {
            ...clean.nodes[0],
            metadata: { note: 'seen as planted-mrn-4712 in clinic', value: 'planted-mrn-4712' },
          },
        ],
        relationships: [],
      },
      ccsr_categories: ['CIR007'],
    });
    expect(leaky.status).toBe(202);

    const events = await eventually(
      () => p.delivered(),
      (e) => e.length === 2,
      { timeoutMs: 30_000 },
    );
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

    const requests = await p.requests();
    const submissions = requests.filter((r) => r.method === 'POST' && r.path === '/v1/concordance');
    expect(submissions).toHaveLength(1);
    const sent = JSON.stringify(requests);
    for (const marker of [PLANTED_ID, PLANTED_NAME, 'PLANTED-MRN-4712', 'Plantedname']) {
      expect(sent.toLowerCase()).not.toContain(marker.toLowerCase());
    }
    expect(JSON.stringify(submissions[0]?.body)).toContain('"ccsr_category":"END002"');

    const health = JSON.parse(await p.start.waitForLine('workers started')) as { url: string };
    expect((await fetch(`${health.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${health.url}/readyz`)).status).toBe(200);
    expect(await (await fetch(`${health.url}/metrics`)).text()).toContain('process_cpu');
    expect((await fetch(`${ingestUrl}/readyz`)).status).toBe(200);

    expect(await p.start.stop('SIGTERM')).toBe(0);
    expect(p.start.lines.some((l) => l.includes('workers stopped'))).toBe(true);
    const logs = [...p.start.lines, ...p.simulator.lines].join('\n').toLowerCase();
    expect(p.start.lines.length).toBeGreaterThan(10);
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
