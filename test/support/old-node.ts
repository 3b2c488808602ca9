import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What bin/project-node.cjs exports (it is CommonJS, for old Node.js versions). */
export interface ProjectNode {
  nodeVersionProblem(version: string, range: string): string | undefined;
  engineRange(): string;
  pinnedVersion(): string;
  nodePackageName(platform: string, arch: string): string;
  cachedNodeDir(version: string, env: Record<string, string | undefined>): string;
  fetchNode(
    version: string,
    env: Record<string, string | undefined>,
    say: (line: string) => void,
  ): string;
}

export const projectNode = createRequire(import.meta.url)(
  '../../bin/project-node.cjs',
) as ProjectNode;

/** The Node.js a newcomer's machine may have: older than engines.node (Debian 12's is 20). */
const OLD_NODE_VERSION = '20.20.2';

function versionOf(node: string): string | undefined {
  try {
    return execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

/** The entries of this process's PATH that the project put there (its node, node_modules/.bin). */
function isProjectEntry(entry: string): boolean {
  const cache = resolve(projectNode.cachedNodeDir('0.0.0', process.env), '..');
  return entry === '' || resolve(entry).startsWith(ROOT) || resolve(entry).startsWith(cache);
}

/**
 * A folder whose `node` is older than engines.node: this machine's own `node` when it is old (as
 * on this kind of machine, Node.js 20), else Node.js 20 fetched once into a test cache, so that the
 * newcomer's path is tried on any machine.
 */
export function oldNodeFolder(): string {
  const range = projectNode.engineRange();
  const path = (process.env.PATH ?? '').split(delimiter).filter((e) => !isProjectEntry(e));
  for (const entry of path) {
    const node = join(entry, 'node');
    const version = existsSync(node) ? versionOf(node) : undefined;
    if (version === undefined) continue;
    if (projectNode.nodeVersionProblem(version, range) !== undefined) return entry;
    break; // the first node on PATH is the one a newcomer runs, and it is new enough
  }
  const cache = join(homedir(), '.cache', 'concordance-worker', 'test-old-node');
  return projectNode.fetchNode(OLD_NODE_VERSION, { ...process.env, CW_NODE_CACHE: cache }, () => {
    // Fetched once, for the tests only; nothing to announce.
  });
}

/** A newcomer's shell: its environment, its (empty) Node.js cache, and what removes both. */
export interface Newcomer {
  env: Record<string, string>;
  cache: string;
  cleanup(): void;
}

/**
 * A newcomer's shell: `oldFolder`'s `node` first on PATH (and, through `#!/usr/bin/env node`, the
 * machine's `npm` run on it), nothing of this repository or of the test runner in the
 * environment, and an empty folder as the cache of fetched Node.js versions (`CW_NODE_CACHE`).
 */
export function newcomer(oldFolder: string): Newcomer {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || /^(npm_|VITEST|NODE_OPTIONS$|TEST_|CW_)/i.test(name)) continue;
    env[name] = value;
  }
  // A folder with nothing but a `node` link, so that a new node next to an old one (say in
  // /usr/local/bin) cannot come first.
  const bin = mkdtempSync(join(tmpdir(), 'cw-old-node-'));
  symlinkSync(join(oldFolder, 'node'), join(bin, 'node'));
  const path = (process.env.PATH ?? '').split(delimiter).filter((e) => !isProjectEntry(e));
  env.PATH = [bin, ...path].join(delimiter);
  const cache = mkdtempSync(join(tmpdir(), 'cw-node-cache-'));
  env.CW_NODE_CACHE = cache;
  return {
    env,
    cache,
    cleanup() {
      for (const folder of [bin, cache]) rmSync(folder, { recursive: true, force: true });
    },
  };
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` through the shell in `cwd` with `env`, as typed at a prompt. */
export async function shell(
  command: string,
  cwd: string,
  env: Record<string, string>,
): Promise<Run> {
  const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => err.push(c));
  const [code] = (await once(child, 'close')) as [number | null];
  return {
    code,
    stdout: Buffer.concat(out).toString('utf8'),
    stderr: Buffer.concat(err).toString('utf8'),
  };
}
