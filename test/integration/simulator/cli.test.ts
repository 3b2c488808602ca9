import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../../../bin/concordance-worker.js', import.meta.url));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function run(args: string[], env: Record<string, string | undefined> = {}) {
  const child = spawn(process.execPath, [bin, 'simulator', ...args], {
    env: { ...process.env, SERVICE_API_KEY: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal, stdout, stderr }));
  /** Resolves with the first stdout line once it is complete; rejects if the process ends first. */
  const firstLine = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const end = stdout.indexOf('\n');
      if (end !== -1) resolve(stdout.slice(0, end));
    });
    void exited.then((r) => reject(new Error(`exited ${r.code}: ${r.stderr}`)));
  });
  // Tests that expect an early exit never wait for the line.
  firstLine.catch(() => undefined);
  return { child, firstLine, exited };
}

const urlOf = (line: string) => /listening on (http:\/\/\S+)/.exec(line)?.[1] ?? '';

describe('concordance-worker simulator', () => {
  it('listens, prints one line without keys, serves, and stops cleanly on SIGTERM', async () => {
    const { child, firstLine, exited } = run([
      '--port',
      '0',
      '--api-key',
      'cli-key-alpha',
      '--api-key',
      'cli-key-beta',
      '--admin-key',
      'cli-admin-gamma',
      '--seed',
      '3',
      '--latency',
      '0-0',
      '--relationships',
      '50',
      '--max-list-limit',
      '20',
    ]);
    const line = await firstLine;
    expect(line).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ .*2 API keys/);
    expect(line).not.toMatch(/alpha|beta|gamma/);
    const url = urlOf(line);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const page = await fetch(`${url}/v1/relationships?include_total=true&limit=1`, {
      headers: { 'x-api-key': 'cli-key-beta' },
    });
    expect(await page.json()).toMatchObject({ total: 50 });
    const tooLarge = await fetch(`${url}/v1/relationships?limit=21`, {
      headers: { 'x-api-key': 'cli-key-beta' },
    });
    expect(tooLarge.status).toBe(422);
    expect(await tooLarge.json()).toEqual({
      detail: [
        {
          loc: ['query', 'limit'],
          msg: 'Input should be less than or equal to 20',
          type: 'less_than_equal',
        },
      ],
    });
    expect(
      (await fetch(`${url}/_admin/faults`, { headers: { 'x-admin-key': 'cli-admin-gamma' } }))
        .status,
    ).toBe(200);
    child.kill('SIGTERM');
    const result = await exited;
    expect(result).toMatchObject({ code: 0, signal: null });
    expect(result.stdout).toContain('simulator stopped');
    expect(result.stdout + result.stderr).not.toMatch(/alpha|beta|gamma/);
  });

  it('takes the key from SERVICE_API_KEY, loads a fault file, and stops on SIGINT', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-cli-'));
    const faults = join(dir, 'faults.yaml');
    writeFileSync(
      faults,
      'routes:\n  "GET /v1/relationships": {error_rate: 1, error_status: 502}\n',
    );
    const { child, firstLine, exited } = run(['--port', '0', '--faults', faults], {
      SERVICE_API_KEY: 'env-key-delta',
    });
    const line = await firstLine;
    expect(line).toContain('1 API key from SERVICE_API_KEY');
    expect(line).not.toContain('delta');
    const url = urlOf(line);
    expect(
      (await fetch(`${url}/v1/relationships`, { headers: { 'x-api-key': 'env-key-delta' } }))
        .status,
    ).toBe(502);
    expect(
      (await fetch(`${url}/v1/relationships`, { headers: { 'x-api-key': 'local-dev-key' } }))
        .status,
    ).toBe(403);
    child.kill('SIGINT');
    expect(await exited).toMatchObject({ code: 0 });
  });

  it('falls back to the local dev key', async () => {
    const { child, firstLine, exited } = run(['--port', '0', '--relationships', '5']);
    const url = urlOf(await firstLine);
    expect(
      (await fetch(`${url}/v1/relationships`, { headers: { 'x-api-key': 'local-dev-key' } }))
        .status,
    ).toBe(200);
    child.kill('SIGTERM');
    await exited;
  });

  it.each([
    [['--port', 'abc'], /--port/],
    [['--port', '70000'], /--port/],
    [['--latency', '50-10'], /--latency/],
    [['--latency', 'fast'], /--latency/],
    [['--relationships', '0'], /--relationships/],
    [['--max-list-limit', '0'], /--max-list-limit/],
    [['--seed', '-1'], /--seed/],
    [['--request-log', 'x'], /--request-log/],
    [['--api-key', ''], /--api-key/],
    [['--faults', '/nonexistent/faults.yaml'], /--faults/],
    [['--no-such-option'], /unknown option/],
  ])('rejects %j with one error line and exit code 2', async (args, message) => {
    const { exited } = run(args);
    const result = await exited;
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
    expect(result.stdout).toBe('');
  });

  it('rejects an invalid fault profile naming the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-cli-'));
    const faults = join(dir, 'bad.json');
    writeFileSync(faults, '{"routes": {"*": {"error_rate": 7}}}');
    const result = await run(['--faults', faults]).exited;
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toMatch(
      /^error: option '--faults': .*bad\.json is not a valid fault profile: routes\.\*\.error_rate/,
    );
  });
});
