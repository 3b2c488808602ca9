import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MAIN = new URL('../../../../src/cli/main.ts', import.meta.url).pathname;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `concordance-worker ARGS` (the sources' main.ts) with only PATH, HOME and `env` in its
 * environment, writes `input` to its standard input, and resolves once it has exited. With
 * `stopReadingAfterFirstChunk` its standard output is closed once the first chunk is read.
 */
export function cli(
  args: string[],
  env: Record<string, string | undefined>,
  input = '',
  { stopReadingAfterFirstChunk = false } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    // As `| head` does: the reader goes away while the command is still writing.
    if (stopReadingAfterFirstChunk) child.stdout.destroy();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The result's standard output parsed as JSON. */
export function jsonOf<T>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(
      `stdout is not JSON (exit ${result.code}):\n${result.stdout}\n${result.stderr}`,
    );
  }
}

/** Writes each of `files` (name -> content; objects as JSON) into a new temporary folder. */
export function tempFiles(files: Record<string, unknown>): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'cw-cli-'));
  return Object.fromEntries(
    Object.entries(files).map(([name, content]) => {
      const path = join(dir, name);
      writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
      return [name, path];
    }),
  );
}

/** The `limit` and status of each `GET /v1/relationships` in a simulator request log. */
export function pageRequests(log: { path: string; status: number | null }[]) {
  return log
    .filter((r) => r.path.startsWith('/v1/relationships?') || r.path === '/v1/relationships')
    .map((r) => [new URL(r.path, 'http://x').searchParams.get('limit'), r.status]);
}
