import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { preventIdentifier } from '../../../src/identity/prevent-identifier.ts';
import { startSimulator, type RunningSimulator } from '../../../src/simulator/start-simulator.ts';
import { SimulatorAdmin } from '../service/support/simulator-admin.ts';
import { cli, jsonOf, tempFiles } from './support/run-cli.ts';

const API_KEY = 'prevent-cli-key';
const IDENTIFIER = 'HOSP-MRN-448812';

const body = {
  patient_biomarkers: { bmi: 33, systolic_bp: 142 },
  patient_history: { smoking: 'current' },
  patient_demographics: { age: 47 },
};

describe('concordance-worker prevent register | recommend', () => {
  let simulator: RunningSimulator;
  let admin: SimulatorAdmin;
  let env: Record<string, string>;
  let files: Record<string, string>;

  beforeAll(async () => {
    simulator = await startSimulator({ port: 0, apiKeys: [API_KEY], relationshipCount: 500 });
    admin = new SimulatorAdmin(simulator.url, API_KEY);
    env = { SERVICE_BASE_URL: simulator.url, SERVICE_API_KEY: API_KEY };
    files = tempFiles({
      'body.json': body,
      'misspelt.json': {
        patient_biomarkers: {},
        patient_history: {},
        patient_demographic: { age: 47 },
      },
    });
  });
  afterAll(() => simulator.close());
  beforeEach(() => admin.reset());

  const register = (args: string[], input?: string) =>
    cli(['prevent', 'register', ...args], env, input);
  /** `prevent recommend --patient-service-id ID --body FILE ...args` (FILE one of `files`). */
  const recommend = (id: string, file: string, args: string[] = []) =>
    cli(
      ['prevent', 'recommend', '--patient-service-id', id, '--body', files[file] ?? '', ...args],
      env,
    );

  it('registers an identifier and prints the patient_service_id, the same one again', async () => {
    const first = await register(['--identifier', IDENTIFIER, '--json']);
    expect(first.code).toBe(0);
    const { patient_service_id: id } = jsonOf<{ patient_service_id: string }>(first);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    // From standard input, so that the identifier stays out of ps; printed as a table.
    const again = await register(['--identifier', '-'], `${IDENTIFIER}\n`);
    expect(again.code).toBe(0);
    expect(again.stdout.split('\n')).toEqual(['patient_service_id', '-'.repeat(36), id, '']);

    const log = await admin.serviceRequests();
    expect(log.map((r) => [r.method, r.path, r.status])).toEqual([
      ['POST', '/v1/patient', 201],
      ['POST', '/v1/patient', 200],
    ]);
    for (const result of [first, again]) {
      expect(result.stdout + result.stderr).not.toContain(IDENTIFIER);
    }
  });

  it('registers a local id as the workers do: its keyed hash (PREVENT_ID_KEY), never the id', async () => {
    const key = randomBytes(32).toString('base64');
    const withKey = await cli(
      ['prevent', 'register', '--local-id', '-', '--json'],
      { ...env, PREVENT_ID_KEY: key },
      `${IDENTIFIER}\n`,
    );
    expect(withKey.code).toBe(0);
    const { patient_service_id: id } = jsonOf<{ patient_service_id: string }>(withKey);
    // The local service logs registrations redacted: what it registered shows in the ids it gives.
    expect(JSON.stringify(await admin.serviceRequests())).not.toContain(IDENTIFIER);
    const raw = await register(['--identifier', IDENTIFIER, '--json']);
    expect(jsonOf<{ patient_service_id: string }>(raw).patient_service_id).not.toBe(id);
    // The pipeline's identifier of that patient names the same service id.
    const same = await register(['--identifier', preventIdentifier(key)(IDENTIFIER), '--json']);
    expect(jsonOf<{ patient_service_id: string }>(same).patient_service_id).toBe(id);
  });

  it('refuses --local-id without PREVENT_ID_KEY, and both forms at once, before sending anything', async () => {
    const noKey = await register(['--local-id', IDENTIFIER]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/--local-id needs PREVENT_ID_KEY/);
    expect(noKey.stderr).not.toContain(IDENTIFIER);
    const both = await register(['--local-id', IDENTIFIER, '--identifier', 'x', '--json']);
    expect(both.code).toBe(2);
    expect(JSON.parse(both.stderr)).toMatchObject({ error: { code: 'ERR_CLI_INPUT' } });
    expect((await register([])).code).toBe(2);
    expect(await admin.serviceRequests()).toEqual([]);
  });

  it('sends the body file with the patient_service_id and prints the recommendations', async () => {
    const id = jsonOf<{ patient_service_id: string }>(
      await register(['--identifier', 'HOSP-MRN-448813', '--json']),
    ).patient_service_id;
    await admin.reset();

    const json = await recommend(id, 'body.json', ['--json']);
    expect(json.code).toBe(0);
    const answer = jsonOf<{
      patient_service_id: string;
      recommendations: { rank: number; factor: string }[];
    }>(json);
    expect(answer.patient_service_id).toBe(id);
    expect(answer.recommendations.length).toBeGreaterThan(0);

    const table = await recommend(id, 'body.json');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^patient_service_id\\s+${id}$`, 'm'));
    expect(table.stdout).toMatch(
      new RegExp(`^recommendations \\(${answer.recommendations.length}\\):$`, 'm'),
    );
    expect(table.stdout).toMatch(/^rank\s+factor\s+description/m);
    for (const item of answer.recommendations) {
      expect(table.stdout).toMatch(new RegExp(`^${item.rank}\\s+${item.factor}\\s`, 'm'));
    }

    const log = await admin.serviceRequests();
    expect(log.map((r) => [r.method, r.path, r.status])).toEqual([
      ['POST', `/v1/patient/${id}`, 200],
      ['POST', `/v1/patient/${id}`, 200],
    ]);
    expect(log[0]?.body).toEqual({ patient_service_id: id, ...body });
  });

  it('shows the service refusing a request (422) readably, exit 1', async () => {
    const tooLong = 'p'.repeat(200);
    const text = await recommend(tooLong, 'body.json');
    expect(text.code).toBe(1);
    expect(text.stderr).toMatch(
      /^concordance-worker: the service rejected the request \(HTTP 422\): path\.patient_service_id: .*128/,
    );
    expect(text.stderr.trim().split('\n')).toHaveLength(1);

    const json = await recommend(tooLong, 'body.json', ['--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toMatchObject({
      error: {
        code: 'ERR_SERVICE_VALIDATION',
        status: 422,
        detail: [{ loc: ['path', 'patient_service_id'], msg: expect.any(String) }],
      },
    });
  });

  it('says "not found" for a patient the service does not know, exit 1', async () => {
    const result = await recommend('unknown', 'body.json');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^concordance-worker: not found \(HTTP 404\)/);
  });

  it('refuses a body file with a misspelt object before sending anything, exit 2', async () => {
    const result = await recommend('any', 'misspelt.json', ['--json']);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stderr)).toMatchObject({
      error: {
        code: 'ERR_CLI_INPUT',
        detail: [
          { loc: ['patient_demographics'], msg: expect.any(String) },
          { loc: [], msg: expect.stringContaining('patient_demographic') },
        ],
      },
    });
    expect(await admin.serviceRequests()).toEqual([]);
  });
});
