import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/simulator/start-simulator.ts';
import { eventually } from '../../support/eventually.ts';
import { SAMPLE_CATEGORY, samplePatient } from '../../support/sample-patient.ts';
import { SimulatorAdmin, type LoggedRequest } from '../service/support/simulator-admin.ts';
import { cli, jsonOf, tempFiles } from './support/run-cli.ts';

const API_KEY = 'concordance-cli-key';

/**
 * Free text and identifying values planted in every place an AssembledPatient file can carry
 * them. Each is a made-up word starting `Fxtcli`, so that one found anywhere in what the service
 * received is a leak.
 */
const plantedRecord = {
  nodes: [
    {
      id: 'n1',
      node_type: 'condition',
      notable: true,
      fhir_id: 'Condition/Fxtclifhirref',
      service_preferred_name: 'Fxtclipreferred',
      note: 'Fxtclinodenote',
      text: { div: '<div>Fxtclinarrative</div>' },
      patient_name: 'Fxtclinodefield',
      coding: [
        { system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9', display: 'Fxtclidisplay' },
      ],
      metadata: {
        status: 'active',
        comment: 'Fxtclimetacomment',
        mrn: 'Fxtclimetamrn',
        interpretation: 'Fxtclisentence the patient said on arrival that it hurt',
      },
    },
    {
      id: 'n2',
      node_type: 'observation',
      notable: false,
      coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'Fxtcliloinc' }],
      metadata: { value: 7.9, unit: '%', phone: 'Fxtcliphone', birth_date: 'Fxtclibirth' },
    },
  ],
  relationships: [
    {
      source_id: 'n2',
      target_id: 'n1',
      relationship_type: 'Fxtcliedge measured because the doctor wanted it',
      remark: 'Fxtcliedgeremark',
    },
  ],
  demographics: {
    age: 57,
    gender: 'female',
    name: 'Fxtcliname',
    address: 'Fxtcliaddress',
    race: 'Fxtclirace written out as a long free text answer',
  },
  identifier: 'Fxtcliidentifier',
  narrative: 'Fxtclirecordnarrative',
};

/** Keys of `value` at any depth. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) => [key, ...keysOf(item)]);
}

const isSubmission = (r: LoggedRequest) => r.method === 'POST' && r.path === '/v1/concordance';
const polls = (log: LoggedRequest[], jobId: string) =>
  log.filter((r) => r.method === 'GET' && r.path === `/v1/concordance/${jobId}`);

describe('concordance-worker concordance submit | get', () => {
  let simulator: RunningSimulator;
  let admin: SimulatorAdmin;
  let env: Record<string, string>;
  /** The simulator's clock: jobs (1 s each) end only when the test moves it on. */
  let clock = 1_700_000_000_000;
  let files: Record<string, string>;

  beforeAll(async () => {
    simulator = await startSimulator({
      port: 0,
      apiKeys: [API_KEY],
      latency: { minMs: 1_000, maxMs: 1_000 },
      now: () => clock,
    });
    admin = new SimulatorAdmin(simulator.url, API_KEY);
    files = tempFiles({
      'sample.json': samplePatient,
      'planted.json': plantedRecord,
      'holds-local-id.json': {
        ...samplePatient,
        nodes: [{ ...samplePatient.nodes[1], metadata: { value: 7.9, unit: 'zq81907' } }],
        relationships: [],
      },
      'broken.json': { nodes: [{ id: 'n1', node_type: 'gene', notable: 'yes' }], demographics: {} },
      'not-json.json': '{"nodes": [ Fxtclinotjson',
      // Polls every 20 ms, without jitter, so that a test sees several before the job ends.
      'fast-poll.yaml':
        'queries:\n  poll: { first_delay_ms: 20, factor: 1, max_delay_ms: 20, jitter: 0 }\n',
    });
    env = { SERVICE_BASE_URL: simulator.url, SERVICE_API_KEY: API_KEY };
  });
  afterAll(() => simulator.close());
  beforeEach(() => admin.reset());

  /** `concordance submit --record FILE ...args` (FILE one of the test's files, else a path). */
  const submit = (file: string, args: string[], input?: string) =>
    cli(['concordance', 'submit', '--record', files[file] ?? file, ...args], env, input);

  /** The sample record submitted for END002 with `--wait`, polling every 20 ms. */
  const submitAndWait = (args: string[]) =>
    cli(
      ['--config', files['fast-poll.yaml'] ?? '', 'concordance', 'submit', '--wait'].concat(
        ['--record', files['sample.json'] ?? '', '--category', 'END002'],
        args,
      ),
      env,
    );

  it('submits a record and prints the job id, as a table and as JSON', async () => {
    const table = await submit('sample.json', ['--category', 'END002']);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^job_id\s+ccsr_category$/);
    const jobId = lines[2]?.split(/\s+/)[0] ?? '';
    expect(lines[2]).toMatch(/^[0-9a-f-]{36}\s+END002$/);

    const json = await submit('sample.json', ['--category', 'END002', '--json']);
    expect(json.code).toBe(0);
    const submitted = jsonOf<{ job_id: string; ccsr_category: string }>(json);
    expect(submitted).toMatchObject({ ccsr_category: 'END002', job_id: expect.any(String) });
    expect(submitted.job_id).not.toBe(jobId);

    const log = await admin.serviceRequests();
    expect(log.filter(isSubmission).map((r) => r.status)).toEqual([202, 202]);
    expect(log.filter(isSubmission)[0]?.body).toMatchObject({ ccsr_category: 'END002' });
  });

  it('sends no identifying field and no free text: the same de-identification as the pipeline', async () => {
    const result = await submit('planted.json', ['--category', SAMPLE_CATEGORY, '--json']);
    expect(result.code).toBe(0);
    const [sent, ...others] = (await admin.serviceRequests()).filter(isSubmission);
    expect(others).toEqual([]);
    expect(sent?.status).toBe(202);
    const body = sent?.body as { assembled_patient: typeof plantedRecord; ccsr_category: string };
    const text = JSON.stringify(body);
    expect(text.toLowerCase()).not.toContain('fxtcli');
    for (const key of ['mrn', 'phone', 'birth_date', 'name', 'address', 'identifier', 'note']) {
      expect(keysOf(body)).not.toContain(key);
    }
    for (const key of ['comment', 'remark', 'text', 'narrative', 'patient_name']) {
      expect(keysOf(body)).not.toContain(key);
    }
    // What may go is still there: the structure, the codes, the coded values, the age.
    expect(body.ccsr_category).toBe(SAMPLE_CATEGORY);
    expect(body.assembled_patient).toMatchObject({
      nodes: [
        {
          id: 'n1',
          node_type: 'condition',
          notable: true,
          coding: [
            {
              system: 'http://hl7.org/fhir/sid/icd-10-cm',
              code: 'E11.9',
              display: 'Type 2 diabetes mellitus without complications',
            },
          ],
          metadata: { status: 'active' },
        },
        {
          id: 'n2',
          coding: [{ system: 'http://loinc.org', code: '4548-4' }],
          metadata: { value: 7.9, unit: '%' },
        },
      ],
      relationships: [{ source_id: 'n2', target_id: 'n1' }],
      demographics: { age: 57, gender: 'female' },
    });
    // The FHIR reference went as an opaque stand-in.
    expect(body.assembled_patient.nodes[0]?.fhir_id).toMatch(/^ref-[A-Za-z0-9_-]{22}$/);
    // The person at the terminal is told what was removed, by kind, without the text.
    expect(jsonOf<{ removed: Record<string, number> }>(result).removed).toEqual({
      display: 3,
      note: 3,
      narrative: 2,
      // mrn, phone, birth_date (identifying), interpretation (a sentence)
      metadata: 4,
      // identifier, patient_name, name, address (undocumented); relationship_type, race (text)
      field: 6,
    });
    expect(result.stderr).toMatch(/^removed before sending .*: 3 display, 3 note, 2 narrative/);
    expect((result.stdout + result.stderr).toLowerCase()).not.toContain('fxtcli');
  });

  it('refuses a record that still holds the local id (read from standard input), sending nothing', async () => {
    const result = await submit(
      'holds-local-id.json',
      ['--category', 'END002', '--local-id', '-'],
      'zq81907\n',
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'concordance-worker: the assembled record still contains the local patient identifier; not sent\n',
    );
    expect(await admin.serviceRequests()).toEqual([]);
  });

  it.each([
    [['--category', 'END999'], /option '--category <code>' argument 'END999' is invalid/],
    [['--category', 'XXX000'], /a placeholder code, not a CCSR v2023\.1 problem category/],
  ])('refuses %j before sending anything, exit 2', async (args, message) => {
    const result = await submit('sample.json', args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(await admin.serviceRequests()).toEqual([]);
  });

  it('names what is wrong with a record file, never its values, exit 2', async () => {
    const broken = await submit('broken.json', ['--category', 'END002']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(
      /^concordance-worker: --record \S+broken\.json: not an AssembledPatient: nodes\.0\.node_type: .*; nodes\.0\.notable: .*; demographics\.age: /,
    );
    expect(broken.stderr.trim().split('\n')).toHaveLength(1);

    const notJson = await submit('not-json.json', ['--category', 'END002', '--json']);
    expect(notJson.code).toBe(2);
    expect(JSON.parse(notJson.stderr)).toMatchObject({
      error: { code: 'ERR_CLI_INPUT', message: expect.stringMatching(/not valid JSON$/) },
    });
    expect(notJson.stderr).not.toContain('Fxtcli');

    const missing = await submit('no-such-file.json', ['--category', 'END002']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read the file \(ENOENT\)/);
    expect(await admin.serviceRequests()).toEqual([]);
  });

  it('--wait polls on the configured schedule until the job ends, then prints the concordance', async () => {
    const run = submitAndWait(['--json']);
    // Three polls find the job still queued; then its time comes.
    const log = await eventually(
      () => admin.serviceRequests(),
      (entries) =>
        entries.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/concordance/')).length >=
        3,
    );
    expect(log.filter(isSubmission)).toHaveLength(1);
    clock += 10_000;
    const result = await run;
    expect(result.code).toBe(0);
    const ended = jsonOf<{
      job_id: string;
      outcome: string;
      status: string;
      concordance: { ccsr_category: string; recommendations: unknown[] };
    }>(result);
    expect(ended).toMatchObject({
      outcome: 'completed',
      status: 'completed',
      ccsr_category: 'END002',
      concordance: { ccsr_category: 'END002' },
    });
    expect(ended.concordance.recommendations.length).toBeGreaterThan(0);
    const gets = polls(await admin.serviceRequests(), ended.job_id);
    expect(gets.length).toBeGreaterThan(3);
    expect(gets.every((r) => r.status === 200)).toBe(true);
    expect(result.stderr).toContain(`submitted job ${ended.job_id}; waiting for it to end`);
    expect(result.stderr).toContain(`job ${ended.job_id}: queued`);
    expect(result.stderr).toContain(`job ${ended.job_id}: completed`);
  });

  it('--wait ends with exit 3 when the job fails, printing the failure', async () => {
    await admin.setFaults({ job_failure_rate: 1 });
    const run = submitAndWait([]);
    await eventually(
      () => admin.serviceRequests(),
      (entries) => entries.some((r) => r.method === 'GET'),
    );
    clock += 10_000;
    const result = await run;
    expect(result.code).toBe(3);
    const [head, rule, row] = result.stdout.split('\n');
    expect(head).toMatch(/^job_id\s+ccsr_category\s+outcome\s+status$/);
    expect(rule).toMatch(/^-+/);
    expect(row).toMatch(/^[0-9a-f-]{36}\s+END002\s+failed\s+failed$/);
    expect(result.stdout).toContain('concordance: none');
    expect(result.stderr).toContain(
      'concordance-worker: the job ended failed: ERR_REMOTE_JOB_FAILED: the remote job ended failed',
    );
  });

  it('--wait --timeout gives up on a job still pending at the deadline, exit 3', async () => {
    const result = await submitAndWait(['--timeout', '1', '--json']);
    expect(result.code).toBe(3);
    expect(jsonOf(result)).toMatchObject({
      outcome: 'timed_out',
      status: 'queued',
      concordance: null,
      error: { code: 'ERR_QUERY_TIMED_OUT' },
    });
  });

  it('get prints a job as a table and as JSON', async () => {
    clock += 10_000;
    const submitted = jsonOf<{ job_id: string }>(
      await submit('sample.json', ['--category', 'END002', '--json']),
    );
    const queued = await cli(['concordance', 'get', submitted.job_id, '--json'], env);
    expect(queued.code).toBe(0);
    expect(jsonOf(queued)).toEqual({
      job_id: submitted.job_id,
      state: 'pending',
      status: 'queued',
      concordance: null,
    });

    clock += 10_000;
    const done = await cli(['concordance', 'get', submitted.job_id], env);
    expect(done.code).toBe(0);
    const lines = done.stdout.split('\n');
    expect(lines[0]).toMatch(/^job_id\s+status\s+state$/);
    expect(lines[2]).toMatch(new RegExp(`^${submitted.job_id}\\s+completed\\s+success$`));
    expect(done.stdout).toMatch(/^ccsr_category\s+END002$/m);
    expect(done.stdout).toMatch(/^recommendations \(\d\):$/m);
  });

  it('get shows an unknown job as the service reports it', async () => {
    const result = await cli(['concordance', 'get', 'no-such-job', '--json'], env);
    expect(result.code).toBe(0);
    expect(jsonOf(result)).toMatchObject({ state: 'lost', status: 'not_exists' });
  });
});
