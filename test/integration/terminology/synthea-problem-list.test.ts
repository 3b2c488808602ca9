import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { segmentOf, sendOne } from '../hl7v2/support/hl7v2-harness.ts';
import { topUnmappedProblems } from '../../../src/terminology/unmapped-problems.ts';
import { eventually } from '../../support/eventually.ts';
import {
  FAST_FEED_PIPELINE_LINES,
  startPipelineProcesses,
  type PipelineProcesses,
} from '../../support/pipeline-processes.ts';
import {
  startTerminologyServer,
  type LocalTerminologyServer,
} from '../../support/terminology-server.ts';

/**
 * Issue 9, Done-when 3: a real Synthea bundle whose problems are SNOMED CT only (active
 * hypertension 38341003 and diabetes 44054006, see test/fixtures/fhir/SOURCES.md) makes the
 * queries for CIR007 and END002 run and their results arrive, through `concordance-worker start`
 * and the local service: with the embedded map alone, with an NLM-format RF2 map file alone, and
 * with a local terminology server alone.
 */
const BUNDLE = readFileSync(
  fileURLToPath(
    new URL('../../fixtures/fhir/synthea-morris-lockman-trimmed.json', import.meta.url),
  ),
  'utf8',
);
const RF2_FILE = fileURLToPath(
  new URL(
    '../../fixtures/terminology/der2_iisssccRefset_ExtendedMapFull_TEST_20250301.txt',
    import.meta.url,
  ),
);
const API_KEY = 'terminology-e2e-api-key';
const TOKEN = 'terminology-e2e-ingest-token-0123';
const SCT = 'http://snomed.info/sct';
const ICD10 = 'http://hl7.org/fhir/sid/icd-10-cm';

let p: PipelineProcesses | undefined;
let server: LocalTerminologyServer | undefined;
afterEach(async () => {
  await p?.close();
  await server?.close();
  p = undefined;
  server = undefined;
});

async function start(terminology: string[]): Promise<PipelineProcesses> {
  p = await startPipelineProcesses({
    apiKey: API_KEY,
    token: TOKEN,
    configLines: [
      ...FAST_FEED_PIPELINE_LINES,
      'terminology:',
      ...terminology.map((line) => `  ${line}`),
    ],
  });
  return p;
}

/** Posts the bundle; waits for the CIR007 and END002 results; returns the presets and the submissions. */
async function runSynthea(pipeline: PipelineProcesses) {
  const posted = await fetch(`${pipeline.ingestUrl}/v1/fhir/Bundle`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/fhir+json' },
    body: BUNDLE,
  });
  expect(posted.status).toBe(202);
  const { patient_service_id: psid } = (await posted.json()) as { patient_service_id: string };
  const events = await eventually(
    async () => (await pipeline.delivered()).filter((e) => e.patient_service_id === psid),
    (found) => ['CIR007', 'END002'].every((c) => found.some((e) => e.ccsr_category === c)),
    { timeoutMs: 45_000 },
  );
  for (const category of ['CIR007', 'END002']) {
    expect(events.find((e) => e.ccsr_category === category)).toMatchObject({
      status: 'completed',
      error: null,
    });
  }
  const presetsResponse = await fetch(
    `${pipeline.ingestUrl}/v1/patients/b218cee9-019d-47a4-b161-e97c0fd6f736/presets`,
    { headers: { authorization: `Bearer ${TOKEN}` } },
  );
  expect(presetsResponse.status).toBe(200);
  const presets = (await presetsResponse.json()) as {
    presets: { ccsr_category: string; source: string }[];
  };
  const submissions = (await pipeline.requests()).filter(
    (r) => r.method === 'POST' && r.path === '/v1/concordance',
  );
  const codings = submissions.flatMap((s) =>
    (
      s.body as { assembled_patient: { nodes: { coding?: { system: string; code: string }[] }[] } }
    ).assembled_patient.nodes.flatMap((n) => n.coding ?? []),
  );
  return {
    categories: presets.presets.map((x) => x.ccsr_category).sort(),
    sources: new Set(presets.presets.map((x) => x.source)),
    codings,
  };
}

describe('Synthea SNOMED-only problems reach CIR007 and END002 (Done-when 3)', () => {
  it('with the embedded map alone', async () => {
    const pipeline = await start(['sources: [embedded]']);
    const { categories, sources, codings } = await runSynthea(pipeline);
    expect(categories).toEqual(expect.arrayContaining(['CIR007', 'END002']));
    expect(sources).toEqual(new Set(['problem_list']));
    // The mapped codes travel as codings of the nodes, beside the SNOMED CT ones.
    expect(codings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ system: ICD10, code: 'I10' }),
        expect.objectContaining({ system: ICD10, code: 'E11.9' }),
        expect.objectContaining({ system: SCT, code: '38341003' }),
      ]),
    );
    // Every active problem of this patient is in the embedded table: nothing is listed unmapped.
    expect(await topUnmappedProblems(pipeline.redis, pipeline.prefix)).toEqual([]);
  });

  it('with an NLM-format RF2 map file alone (the embedded table off)', async () => {
    const pipeline = await start(['sources: [rf2_file]', `rf2_file: ${JSON.stringify(RF2_FILE)}`]);
    const { categories, codings } = await runSynthea(pipeline);
    // Our test map holds only these two concepts: the other problems stay unmapped, and listed.
    expect(categories).toEqual(['CIR007', 'END002']);
    expect(codings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ system: ICD10, code: 'I10' }),
        expect.objectContaining({ system: ICD10, code: 'E11.9' }),
      ]),
    );
    const unmapped = await topUnmappedProblems(pipeline.redis, pipeline.prefix);
    expect(unmapped.map((u) => u.code).sort()).toEqual(
      ['15777000', '237602007', '271737000', '302870006', '368581000119106', '80394007'].sort(),
    );
    expect(unmapped.every((u) => u.system === SCT && u.count === 1)).toBe(true);
  });

  it('with a local terminology server alone ($translate, answers cached in Redis)', async () => {
    server = await startTerminologyServer({
      table: { [`${SCT}|38341003`]: ['I10'], [`${SCT}|44054006`]: ['E11.9'] },
    });
    const pipeline = await start([
      'sources: [server]',
      `server: { base_url: ${JSON.stringify(server.baseUrl)}, method: POST }`,
    ]);
    const { categories } = await runSynthea(pipeline);
    expect(categories).toEqual(['CIR007', 'END002']);
    const asked = server.calls.map((c) => c.params.code);
    expect(asked).toEqual(expect.arrayContaining(['38341003', '44054006']));
    expect(server.calls.every((c) => c.method === 'POST')).toBe(true);
    // Each code was asked once: the answers (and the "no mapping" ones) are cached.
    expect(new Set(asked).size).toBe(asked.length);
    const cached = await pipeline.redis.keys(`${pipeline.prefix}:terminology:translate:*`);
    expect(cached.length).toBe(asked.length);
  });

  it('an ICD-10-GM diagnosis over MLLP (DG1-3 ^icd10gm2023, a German feed) maps through the hospital CSV: END002 runs', async () => {
    const csv = join(mkdtempSync(join(tmpdir(), 'cw-terminology-')), 'local-codes.csv');
    writeFileSync(csv, 'system,code,icd10cm\nicd10gm2023,E11.90,E11.9\n');
    const pipeline = await start(['sources: [csv_file]', `csv_file: ${JSON.stringify(csv)}`]);
    const born = `${new Date().getUTCFullYear() - 58}0301`;
    const message = [
      'MSH|^~\\&|ORBIS|KH|CW|KH|20260101120000||ADT^A08^ADT_A01|CTRL-GM-1|P|2.5||||||UNICODE UTF-8',
      `PID|1||TERMGM01^^^KH^MR||Müller^Jörg||${born}|M`,
      'DG1|1||E11.90^Diabetes mellitus, Typ 2: Ohne Komplikationen^icd10gm2023||20260101|F',
    ].join('\r');
    const ack = await sendOne(pipeline.mllpPort, message);
    expect(segmentOf(ack ?? '', 'MSA').slice(1, 3)).toEqual(['AA', 'CTRL-GM-1']);
    const [event] = await eventually(
      () => pipeline.delivered(),
      (events) => events.some((e) => e.ccsr_category === 'END002'),
      { timeoutMs: 45_000 },
    );
    expect(event).toMatchObject({ ccsr_category: 'END002', status: 'completed', error: null });
    const [submission] = (await pipeline.requests()).filter(
      (r) => r.method === 'POST' && r.path === '/v1/concordance',
    );
    expect(JSON.stringify(submission?.body)).toContain('"E11.9"');
    expect(JSON.stringify(submission?.body)).toContain('"E11.90"');
  });

  it('an ICD-9-CM problem over MLLP (PPR^PC1, PRB-3 ^I9) maps through the hospital CSV: END002 runs', async () => {
    const csv = join(mkdtempSync(join(tmpdir(), 'cw-terminology-')), 'local-codes.csv');
    writeFileSync(csv, 'system,code,icd10cm\nI9,250.00,E11.9\n');
    const pipeline = await start(['sources: [csv_file]', `csv_file: ${JSON.stringify(csv)}`]);
    const born = `${new Date().getUTCFullYear() - 61}0412`;
    const message = [
      'MSH|^~\\&|EHR|HOSP|CW|HOSP|20260101120000||PPR^PC1|CTRL-I9-1|P|2.3.1',
      `PID|1||TERM9001^^^HOSP^MR||Testperson^Ida||${born}|F`,
      'PRB|AD|20260101120000|250.00^DIABETES MELLITUS^I9|PRB-I9-1||||||||||ACTIVE',
    ].join('\r');
    const ack = await sendOne(pipeline.mllpPort, message);
    expect(segmentOf(ack ?? '', 'MSA').slice(1, 3)).toEqual(['AA', 'CTRL-I9-1']);
    const [event] = await eventually(
      () => pipeline.delivered(),
      (events) => events.some((e) => e.ccsr_category === 'END002'),
      { timeoutMs: 45_000 },
    );
    expect(event).toMatchObject({ ccsr_category: 'END002', status: 'completed', error: null });
    const [submission] = (await pipeline.requests()).filter(
      (r) => r.method === 'POST' && r.path === '/v1/concordance',
    );
    expect(JSON.stringify(submission?.body)).toContain('"E11.9"');
    expect(JSON.stringify(submission?.body)).toContain('"250.00"');
  });
});
