import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/simulator/start-simulator.ts';
import { SimulatorAdmin } from '../service/support/simulator-admin.ts';
import { cli, jsonOf, pageRequests } from './support/run-cli.ts';

describe('concordance-worker relationships', () => {
  let simulator: RunningSimulator;
  let env: Record<string, string>;

  beforeAll(async () => {
    simulator = await startSimulator({ port: 0, apiKeys: ['cli-key'], relationshipCount: 250 });
    env = { SERVICE_BASE_URL: simulator.url, SERVICE_API_KEY: 'cli-key' };
  });
  afterAll(() => simulator.close());

  it('lists a page as JSON with its total, and the same page as a table', async () => {
    const json = await cli(['relationships', 'list', '--limit', '3', '--total', '--json'], env);
    expect(json.code).toBe(0);
    const page = JSON.parse(json.stdout) as { data: { relationship_id: string }[]; total: number };
    expect(page.total).toBe(250);
    expect(page.data).toHaveLength(3);

    const table = await cli(['relationships', 'list', '--limit', '3', '--total'], env);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^relationship_id\s+from\s+to\s+studies/);
    for (const [i, item] of page.data.entries())
      expect(lines[i + 2]).toContain(item.relationship_id);
    expect(lines.at(-1)).toBe('total: 250');
  });

  it('walks every page with --all and projects --fields', async () => {
    const all = await cli(
      ['relationships', 'list', '--all', '--limit', '40', '--fields', 'relationship_id', '--json'],
      env,
    );
    expect(all.code).toBe(0);
    const items = (JSON.parse(all.stdout) as { data: Record<string, unknown>[] }).data;
    expect(items).toHaveLength(250);
    expect(new Set(items.map((i) => i.relationship_id)).size).toBe(250);
    for (const item of items) expect(Object.keys(item)).toEqual(['relationship_id']);
  });

  it('gets one relationship, and says "not found" for an unknown id', async () => {
    const first = await cli(['relationships', 'list', '--limit', '1', '--json'], env);
    const id = (JSON.parse(first.stdout) as { data: { relationship_id: string }[] }).data[0]
      ?.relationship_id;
    expect(id).toBeDefined();
    const got = await cli(['relationships', 'get', String(id), '--json'], env);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ relationship_id: id });

    const missing = await cli(['relationships', 'get', 'no-such-relationship'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    expect(missing.stderr).toMatch(/not found \(HTTP 404\)/);
  });

  it('ends with one clear line for a missing key, a wrong key, a 422 and an unreachable service', async () => {
    const noKey = await cli(['relationships', 'list'], { SERVICE_BASE_URL: simulator.url });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/^concordance-worker: SERVICE_API_KEY is not set/);

    const wrongKey = await cli(['relationships', 'list'], { ...env, SERVICE_API_KEY: 'wrong' });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/refused the API key \(HTTP 403\)/);
    expect(wrongKey.stderr).not.toContain('wrong');

    const badLimit = await cli(['relationships', 'list', '--limit', '5000'], env);
    expect(badLimit.code).toBe(1);
    expect(badLimit.stderr).toMatch(/rejected the request \(HTTP 422\): query\.limit/);

    const down = await cli(['relationships', 'list'], {
      ...env,
      SERVICE_BASE_URL: 'http://127.0.0.1:9',
    });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach the Clinical Graph Service/);
    for (const result of [noKey, wrongKey, badLimit, down]) {
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('rejects a negative offset before sending anything', async () => {
    const result = await cli(['relationships', 'list', '--offset', '-1'], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/expected a whole number >= 0/);
  });
});

describe('concordance-worker relationships: sort and page sizes', () => {
  let simulator: RunningSimulator;
  let admin: SimulatorAdmin;
  let env: Record<string, string>;

  beforeAll(async () => {
    // The interface states no largest limit; this service takes at most 300 per page.
    simulator = await startSimulator({
      port: 0,
      apiKeys: ['cli-key'],
      relationshipCount: 700,
      maxListLimit: 300,
    });
    admin = new SimulatorAdmin(simulator.url, 'cli-key');
    env = { SERVICE_BASE_URL: simulator.url, SERVICE_API_KEY: 'cli-key' };
  });
  afterAll(() => simulator.close());
  beforeEach(() => admin.reset());

  it('shows the service refusing a sort field in one readable line, exit 1', async () => {
    const result = await cli(['relationships', 'list', '--sort', 'relationship_id:desc'], env);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      'concordance-worker: the service rejected the request (HTTP 422): query.sort: no sort field is currently supported\n',
    );
    expect(pageRequests(await admin.serviceRequests())).toEqual([[null, 422]]);
  });

  it('gives the refusal with its detail items under --json, and refuses a sort with --all too', async () => {
    const result = await cli(
      ['relationships', 'list', '--all', '--sort', 'relationship_id:asc', '--json'],
      env,
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr)).toEqual({
      error: {
        code: 'ERR_SERVICE_VALIDATION',
        status: 422,
        message: expect.stringContaining('query.sort: no sort field is currently supported'),
        // With the default page size (1000) over this service's largest (300) the limit is refused
        // too, in the same answer: not halved, as halving would not help.
        detail: [
          {
            loc: ['query', 'limit'],
            msg: 'Input should be less than or equal to 300',
            type: 'less_than_equal',
          },
          { loc: ['query', 'sort'], msg: 'no sort field is currently supported', type: 'custom' },
        ],
      },
    });
  });

  it('halves the default page size of --all while the service refuses it, and says so', async () => {
    const result = await cli(
      ['relationships', 'list', '--all', '--fields', 'relationship_id', '--json'],
      env,
    );
    expect(result.code).toBe(0);
    const items = jsonOf<{ data: { relationship_id: string }[] }>(result).data;
    expect(items).toHaveLength(700);
    expect(new Set(items.map((i) => i.relationship_id)).size).toBe(700);
    expect(pageRequests(await admin.serviceRequests())).toEqual([
      ['1000', 422],
      ['500', 422],
      ['250', 200],
      ['250', 200],
      ['250', 200],
    ]);
    expect(result.stderr.trim().split('\n')).toEqual([
      'the service refused a page size of 1000 (query.limit: Input should be less than or equal to 300); asking for 500',
      'the service refused a page size of 500 (query.limit: Input should be less than or equal to 300); asking for 250',
    ]);
  });

  it('asks for --page-size per request when the service takes it', async () => {
    const result = await cli(
      ['relationships', 'list', '--all', '--page-size', '300', '--offset', '100'],
      env,
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    // A header, a rule and 600 rows.
    expect(result.stdout.trim().split('\n')).toHaveLength(602);
    expect(pageRequests(await admin.serviceRequests())).toEqual([
      ['300', 200],
      ['300', 200],
      ['300', 200],
    ]);
  });

  it.each([
    [['--page-size', '20'], /--page-size needs --all/],
    [['--all', '--page-size', '20', '--limit', '20'], /not both/],
    [['--all', '--page-size', '0'], /expected a whole number >= 1/],
  ])('refuses %j before sending anything, exit 2', async (args, message) => {
    const result = await cli(['relationships', 'list', ...args], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(await admin.serviceRequests()).toEqual([]);
  });
});

describe('concordance-worker relationships list --all against a service without a small limit', () => {
  it('walks 2,500 relationships in pages of 1,000, and ends quietly when its reader goes', async () => {
    const simulator = await startSimulator({
      port: 0,
      apiKeys: ['cli-key'],
      relationshipCount: 2_500,
    });
    try {
      const admin = new SimulatorAdmin(simulator.url, 'cli-key');
      const result = await cli(['relationships', 'list', '--all', '--json'], {
        SERVICE_BASE_URL: simulator.url,
        SERVICE_API_KEY: 'cli-key',
      });
      expect(result.code).toBe(0);
      expect(jsonOf<{ data: unknown[] }>(result).data).toHaveLength(2_500);
      expect(pageRequests(await admin.serviceRequests())).toEqual([
        ['1000', 200],
        ['1000', 200],
        ['1000', 200],
      ]);

      // Half a megabyte of JSON into a reader that stops after the first chunk (`| head`).
      const cut = await cli(
        ['relationships', 'list', '--all', '--json'],
        { SERVICE_BASE_URL: simulator.url, SERVICE_API_KEY: 'cli-key' },
        '',
        { stopReadingAfterFirstChunk: true },
      );
      expect(cut.stdout.startsWith('{')).toBe(true);
      expect(cut.stdout.length).toBeLessThan(result.stdout.length);
      expect(cut).toMatchObject({ code: 0, stderr: '' });
    } finally {
      await simulator.close();
    }
  });
});
