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
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { segmentOf, sendOne } from '../hl7v2/support/hl7v2-harness.ts';

const API_KEY = 'hl7-e2e-api-key';
const TOKEN = 'hl7-e2e-ingest-token-0123456789';
const MRN = 'PLNT77120';
const PLANTED = [
  'PLNT77120',
  'Zorbington',
  'Philomena',
  '912-33-4455',
  '912334455',
  '5557771234',
  'Marblequarry',
];

/** A problem-list message: PC1 adds, PC3 deletes; the patient is 97 and every PID field is planted. */
function ppr(trigger: 'PC1' | 'PC3', controlId: string): string {
  const born = `${new Date().getUTCFullYear() - 97}0301`;
  return [
    `MSH|^~\\&|EHR|HOSP|CW|HOSP|20260101120000||PPR^${trigger}|${controlId}|P|2.5.1`,
    `PID|1||${MRN}^^^HOSP^MR~912-33-4455^^^SSA^SS||Zorbington^Philomena^Q||${born}|F|||77 Marblequarry Road^^Springfield^IL^62704||(555)777-1234`,
    `PRB|${trigger === 'PC1' ? 'AD' : 'DE'}|20260101120000|E11.9^Type 2 diabetes mellitus without complications^I10|PRB-1||||||||||ACTIVE`,
  ].join('\r');
}

describe('an HL7 v2 problem over MLLP, end to end (concordance-worker start + simulator)', () => {
  let simulator: CliProcess;
  let start: CliProcess;
  let simulatorUrl: string;
  let ingestUrl: string;
  let mllpPort: number;
  let redis: Awaited<ReturnType<typeof isolatedRedis>>;
  let results: Queue<ResultEvent>;

  beforeAll(async () => {
    redis = await isolatedRedis();
    simulator = new CliProcess(
      ['simulator', '--port', '0', '--api-key', API_KEY, '--latency', '200-400'],
      {},
    );
    simulatorUrl =
      /listening on (\S+)/.exec(await simulator.waitForLine('listening on'))?.[1] ?? '';
    const config = join(mkdtempSync(join(tmpdir(), 'cw-hl7e2e-')), 'config.yaml');
    writeFileSync(
      config,
      'queries:\n  debounce_ms: 200\n  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }\n' +
        'presets:\n  rules: []\n  from_problem_list: { enabled: true, categories: outpatient_default }\n',
    );
    start = new CliProcess(['--config', config, 'start'], {
      REDIS_URL: testRedisUrl(),
      REDIS_PREFIX: redis.prefix,
      SERVICE_BASE_URL: simulatorUrl,
      SERVICE_API_KEY: API_KEY,
      INGEST_TOKENS: TOKEN,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      INGEST_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      MLLP_PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'trace',
    });
    const listening = JSON.parse(await start.waitForLine('ingest listening')) as {
      url: string;
      mllp_port: number;
    };
    ingestUrl = listening.url;
    mllpPort = listening.mllp_port;
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

  const presets = async () => {
    const response = await fetch(`${ingestUrl}/v1/patients/${MRN}/presets`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return ((await response.json()) as { presets: { ccsr_category: string; source: string }[] })
      .presets;
  };

  it('E11.9 on the problem list runs END002 and its result arrives; no identifier reaches the service; deleting the problem removes the preset', async () => {
    const ack = await sendOne(mllpPort, ppr('PC1', 'CTRL-PC1-1'));
    expect(segmentOf(ack ?? '', 'MSA').slice(1, 3)).toEqual(['AA', 'CTRL-PC1-1']);
    expect(await presets()).toEqual([
      expect.objectContaining({ ccsr_category: 'END002', source: 'problem_list' }),
    ]);

    const [event] = await eventually(
      async () => (await results.getJobs(['wait', 'active', 'completed'])).map((j) => j.data),
      (events) => events.length === 1,
      { timeoutMs: 30_000 },
    );
    expect(event?.error).toBeNull();
    expect(event).toMatchObject({ status: 'completed', ccsr_category: 'END002', patient_id: MRN });

    const requests = (await (
      await fetch(`${simulatorUrl}/_admin/requests`, { headers: { 'x-admin-key': API_KEY } })
    ).json()) as { method: string; path: string; body: unknown }[];
    const [submission] = requests.filter(
      (r) => r.method === 'POST' && r.path === '/v1/concordance',
    );
    const body = submission?.body as { assembled_patient: { demographics: { age: number } } };
    expect(body.assembled_patient.demographics.age).toBe(90);
    const sent = JSON.stringify(requests).toLowerCase();
    const logs = start.lines.join('\n').toLowerCase();
    for (const marker of PLANTED) {
      expect(sent).not.toContain(marker.toLowerCase());
      expect(logs).not.toContain(marker.toLowerCase());
    }

    const deleted = await sendOne(mllpPort, ppr('PC3', 'CTRL-PC3-1'));
    expect(segmentOf(deleted ?? '', 'MSA').slice(1, 3)).toEqual(['AA', 'CTRL-PC3-1']);
    expect(await presets()).toEqual([]);
  });
});
