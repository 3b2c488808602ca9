import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/simulator/start-simulator.ts';

const run = promisify(execFile);
const MAIN = new URL('../../../src/cli/main.ts', import.meta.url).pathname;

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

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
