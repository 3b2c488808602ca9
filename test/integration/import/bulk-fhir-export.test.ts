import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { cli, jsonOf, type CliResult } from '../cli/support/run-cli.ts';
import {
  BULK_FHIR_FIXTURES,
  startExportServer,
  type LocalExportServer,
} from '../../support/export-server.ts';
import { dueQueries, type DueEntry } from '../../support/ingest-stack.ts';
import { isolatedRedis, testRedisEnv } from '../../support/redis.ts';

const MAIN = new URL('../../../src/cli/main.ts', import.meta.url).pathname;

/** The fixture's facts (test/fixtures/bulk-fhir/SOURCE.md): 25 patients, 20 with a mapped problem. */
const PATIENTS = 25;
const WITH_MAPPED_PROBLEM = 20;

interface Summary {
  already_done: boolean;
  patients: number;
  patients_changed: number;
  queries_opened: number;
  resources: Record<string, number>;
  errors: number;
  transaction_time: string | null;
}

let redisEnv: Awaited<ReturnType<typeof isolatedRedis>>;
let server: LocalExportServer;
let work: string;
let env: Record<string, string>;
let keyFile: string;

beforeEach(async () => {
  redisEnv = await isolatedRedis();
  server = await startExportServer({
    folder: BULK_FHIR_FIXTURES,
    pollsBeforeReady: 2,
    retryAfterSeconds: 0,
  });
  work = mkdtempSync(join(tmpdir(), 'cw-bulk-'));
  const { publicKey, privateKey } = await generateKeyPair('ES384', { extractable: true });
  server.registerClient('concordance-worker-test', {
    keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES384' }],
  });
  keyFile = join(work, 'client.jwk.json');
  writeFileSync(
    keyFile,
    JSON.stringify({ ...(await exportJWK(privateKey)), kid: 'k1', alg: 'ES384' }),
  );
  env = {
    ...testRedisEnv(),
    REDIS_PREFIX: redisEnv.prefix,
    CROSSWALK_KEY: generateCrosswalkSecret(),
    LOG_LEVEL: 'info',
  };
});

afterEach(async () => {
  await server.close();
  await redisEnv.cleanup();
  rmSync(work, { recursive: true, force: true });
});

const exportArgs = (extra: string[] = []) => [
  'import',
  'bulk-fhir',
  '--server',
  server.baseUrl,
  '--client-id',
  'concordance-worker-test',
  '--private-key',
  keyFile,
  '--state-dir',
  join(work, 'state'),
  '--max-waiting',
  '0',
  '--json',
  ...extra,
];

/** Every query in the outbox (no worker runs: what the imports opened stays there). */
const opened = () => dueQueries(redisEnv.redis, redisEnv.prefix);

function expectEachQueryOnce(queries: DueEntry[]): void {
  const keys = queries.map((q) => `${q.patientServiceId}|${q.ccsrCategory}`);
  expect(new Set(keys).size).toBe(keys.length);
  expect(queries.every((q) => q.seq === 1)).toBe(true);
}

/** A family name of the fixture's first Patient: a marker that must never be at rest in clear. */
function aFamilyName(): string {
  const first =
    readFileSync(join(BULK_FHIR_FIXTURES, 'Patient.ndjson'), 'utf8').split('\n')[0] ?? '';
  const family = (JSON.parse(first) as { name?: { family?: string }[] }).name?.[0]?.family;
  if (family === undefined || family.length < 4)
    throw new Error('the fixture changed: no family name');
  return family;
}

describe('import bulk-fhir from a $export server (SMART Backend Services)', () => {
  it('exports and imports end to end: one set of queries per patient with a mapped problem; a re-run opens none', async () => {
    const first = await cli(exportArgs(), env);
    expect(first.code, first.stderr).toBe(0);
    const summary = jsonOf<Summary>(first);
    expect(summary).toMatchObject({
      already_done: false,
      patients: PATIENTS,
      patients_changed: PATIENTS,
      errors: 0,
    });
    expect(summary.transaction_time).not.toBeNull();
    const queries = await opened();
    expect(summary.queries_opened).toBe(queries.length);
    expect(new Set(queries.map((q) => q.patientServiceId)).size).toBe(WITH_MAPPED_PROBLEM);
    expectEachQueryOnce(queries);
    // One kick-off, the status polled until ready, the export deleted once read.
    expect(server.requests('/fhir/Patient/$export')).toBe(1);
    expect(server.requests('/auth/token')).toBe(1);

    // The same state folder: the run is over, nothing is read again.
    const again = jsonOf<Summary>(await cli(exportArgs(), env));
    expect(again).toMatchObject({ already_done: true, patients: PATIENTS });
    expect(server.requests('/fhir/Patient/$export')).toBe(1);

    // A second run of the same export (--restart): every patient is as stored, no query opens.
    const rerun = await cli(exportArgs(['--restart']), env);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(jsonOf<Summary>(rerun)).toMatchObject({
      already_done: false,
      patients: PATIENTS,
      patients_changed: 0,
      queries_opened: 0,
    });
    expect(await opened()).toEqual(queries);
  });

  it('resumes a download cut mid-file where it stopped, and opens nothing twice', async () => {
    server.cutAfterLines('Condition', 40);
    const cut = await cli(exportArgs(), env);
    expect(cut.code).toBe(1);
    expect(cut.stdout).toBe('');
    // Read so far, sealed in the state folder: never a name in clear.
    const state = join(work, 'state');
    const marker = aFamilyName();
    for (const name of readdirSync(state)) {
      expect(readFileSync(join(state, name), 'utf8')).not.toContain(marker);
    }

    const resumed = await cli(exportArgs(), env);
    expect(resumed.code, resumed.stderr).toBe(0);
    const summary = jsonOf<Summary>(resumed);
    expect(summary).toMatchObject({ patients: PATIENTS, errors: 0 });
    // The export was kicked off once: the resumed run went on with the same one.
    expect(server.requests('/fhir/Patient/$export')).toBe(1);
    // Every line counted once across the two runs.
    const conditionLines = readFileSync(join(BULK_FHIR_FIXTURES, 'Condition.ndjson'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '').length;
    expect(summary.resources['Condition']).toBe(conditionLines);
    const queries = await opened();
    expect(new Set(queries.map((q) => q.patientServiceId)).size).toBe(WITH_MAPPED_PROBLEM);
    expect(summary.queries_opened).toBe(queries.length);
    expectEachQueryOnce(queries);
  });

  it('resumes after a kill while committing, and opens nothing twice', async () => {
    // No worker runs, so the outbox only grows: pacing holds the run once 4 queries wait, and it is
    // killed there, in the middle of its second phase.
    const paced = exportArgs(['--concurrency', '1']).map((a) => (a === '0' ? '4' : a));
    const killed = await new Promise<CliResult>((resolve, reject) => {
      const child = spawn(process.execPath, [MAIN, ...paced], {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk;
        if (stderr.includes('bulk import paced')) child.kill('SIGKILL');
      });
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(killed.stderr).toContain('bulk import paced');
    expect(killed.stdout).toBe('');
    const before = await opened();
    expect(before.length).toBeGreaterThanOrEqual(4);
    expectEachQueryOnce(before);

    const resumed = await cli(exportArgs(), env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('bulk import resumed');
    const summary = jsonOf<Summary>(resumed);
    const queries = await opened();
    expect(new Set(queries.map((q) => q.patientServiceId)).size).toBe(WITH_MAPPED_PROBLEM);
    expectEachQueryOnce(queries);
    // Every patient committed; the queries of a bucket cut short were opened by the killed run,
    // so the summary (kept per finished bucket) counts at most what the outbox holds.
    expect(summary.patients).toBe(PATIENTS);
    expect(summary.queries_opened).toBeLessThanOrEqual(queries.length);
    expect(summary.queries_opened).toBeGreaterThanOrEqual(queries.length - before.length);
  });

  it('refuses a client the server does not know, opening nothing', async () => {
    const { privateKey } = await generateKeyPair('ES384', { extractable: true });
    writeFileSync(
      keyFile,
      JSON.stringify({ ...(await exportJWK(privateKey)), kid: 'k1', alg: 'ES384' }),
    );
    const refused = await cli(exportArgs(), env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('ERR_IMPORT_AUTH');
    expect(server.requests('/fhir/Patient/$export')).toBe(0);
    expect(await opened()).toEqual([]);
  });
});
