import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newcomer, oldNodeFolder, projectNode, ROOT, shell } from '../../support/old-node.ts';
import { testRedisUrl } from '../../support/redis.ts';

/**
 * A temporary clone of this checkout: every file git tracks or would add (what `git clone` of
 * the working tree gives), none of node_modules or of what the tests and the demo wrote.
 */
function temporaryClone(): string {
  const clone = mkdtempSync(join(tmpdir(), 'cw-fresh-clone-'));
  const listed = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  for (const file of listed.split('\0')) {
    if (file === '' || !existsSync(join(ROOT, file))) continue; // deleted, not yet committed
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(clone, file)); // keeps the mode: scripts stay executable
  }
  return clone;
}

const removals: (() => void)[] = [];
afterAll(() => {
  for (const remove of removals.splice(0)) remove();
});

describe("the README's two commands, on a fresh machine as it comes", () => {
  it('`npm ci && npm run demo`, then `npm test -- <one file>`, with Node.js 20 first on PATH and an empty cache', async () => {
    const clone = temporaryClone();
    removals.push(() => rmSync(clone, { recursive: true, force: true }));
    const shellOf = newcomer(oldNodeFolder());
    removals.push(() => shellOf.cleanup());
    const env = { ...shellOf.env, REDIS_URL: testRedisUrl() };
    expect(readdirSync(shellOf.cache)).toEqual([]);

    const demo = await shell('npm ci && npm run demo', clone, env);
    const output = `${demo.stdout}\n${demo.stderr}`;
    expect(demo.code, output).toBe(0);
    // npm ci says nothing about engines, and the one line that follows says what happens instead.
    expect(output).not.toContain('EBADENGINE');
    const fetched = output.split('\n').filter((line) => line.includes('from the npm registry'));
    expect(fetched).toEqual([
      expect.stringMatching(
        new RegExp(
          `^concordance-worker needs Node\\.js >=\\d+\\.\\d+ and this is Node\\.js v[\\d.]+: fetching Node\\.js ${projectNode.pinnedVersion().replaceAll('.', '\\.')} from the npm registry`,
        ),
      ),
    ]);
    // The demo's summary: its webhook deliveries, each verified by the receiver.
    const verified = /webhook deliveries verified \/ rejected\s+(\d+) \/ (\d+)/.exec(demo.stdout);
    expect(verified, demo.stdout).not.toBeNull();
    expect(Number(verified?.[1])).toBeGreaterThan(0);
    expect(verified?.[2]).toBe('0');

    // The cache holds the fetched Node.js; the clone holds nothing of it.
    expect(readdirSync(shellOf.cache)).toEqual([
      `v${projectNode.pinnedVersion()}-${process.platform}-${process.arch}`,
    ]);
    const test = await shell('npm test -- src/service/backoff.test.ts', clone, env);
    expect(test.code, `${test.stdout}\n${test.stderr}`).toBe(0);
    expect(test.stdout).toMatch(/tests: [1-9]\d* passed, 0 failed/);
    expect(`${test.stdout}${test.stderr}`).not.toContain('from the npm registry'); // fetched once
  }, 900_000);
});
