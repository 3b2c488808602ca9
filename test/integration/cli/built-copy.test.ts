import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { freePort } from '../../../tools/local-redis.ts';
import { eventually } from '../../support/eventually.ts';
import { CliProcess } from '../../../tools/cli-process.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  devDependencies: Record<string, string>;
};

/**
 * The built copy as it ships (the Docker image's layout): package files, `bin/`, `config/`,
 * `data/`, `LICENSE` and `dist/` from `npm run build` (its tsc project and its .lua files), with production dependencies
 * only (`npm ci --omit=dev`) and no sources at all, so that nothing can fall back on them.
 */
let copy: string;

beforeAll(async () => {
  copy = mkdtempSync(join(tmpdir(), 'cw-built-copy-'));
  for (const entry of ['package.json', 'package-lock.json', 'LICENSE', 'bin', 'config', 'data']) {
    cpSync(join(ROOT, entry), join(copy, entry), { recursive: true });
  }
  await run(
    process.execPath,
    [
      join(ROOT, 'node_modules/typescript/bin/tsc'),
      ...['-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(copy, 'dist')],
    ],
    { cwd: ROOT },
  );
  // The Redis scripts (.lua) beside the compiled code, as npm run build puts them.
  await run('npm', ['run', '-s', 'build:lua', '--', join(copy, 'dist')], { cwd: ROOT });
  await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'], {
    cwd: copy,
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
}, 300_000);

afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
});

/** A config file with one preset rule for `category`. */
function rulesConfig(category = 'END002'): string {
  const file = join(mkdtempSync(join(copy, 'rules-')), 'config.yaml');
  writeFileSync(file, `presets:\n  rules:\n    - ccsr_category: ${category}\n`);
  return file;
}

const cli = (args: string[], env: Record<string, string> = {}) =>
  new CliProcess(args, env, join(copy, 'bin/concordance-worker.js'));

describe('the built copy (npm run build) with production dependencies only', () => {
  it('holds the compiled program and no sources, tests or devDependencies', () => {
    expect(existsSync(join(copy, 'dist/src/cli/main.js'))).toBe(true);
    expect(existsSync(join(copy, 'src'))).toBe(false);
    const files = readdirSync(join(copy, 'dist'), { recursive: true, encoding: 'utf8' });
    expect(files.filter((file) => /\.test\.(js|ts)$|\.ts$/.test(file))).toEqual([]);
    const installed = readdirSync(join(copy, 'node_modules'));
    const scoped = installed
      .filter((name) => name.startsWith('@'))
      .flatMap((scope) =>
        readdirSync(join(copy, 'node_modules', scope)).map((n) => `${scope}/${n}`),
      );
    // A devDependency that production also needs (ajv through fastify, semver) ships, as it must;
    // the lock file marks what only the development tree needs (`dev: true`): none of that does.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = (name: string) => lock.packages[`node_modules/${name}`]?.dev === true;
    expect(Object.keys(pkg.devDependencies).filter(devOnly).length).toBeGreaterThan(0);
    expect([...installed, ...scoped].filter(devOnly)).toEqual([]);
  });

  it('--version prints the package version', async () => {
    const version = cli(['--version']);
    expect(await version.exited).toBe(0);
    expect(version.lines).toEqual([pkg.version]);
  });

  it('config check reads config/default.yaml and the CCSR tables, and accepts a valid environment', async () => {
    const check = cli(['--config', rulesConfig(), 'config', 'check'], {
      CROSSWALK_KEY: generateCrosswalkSecret(),
      INGEST_TOKENS: randomBytes(24).toString('base64'),
      SERVICE_API_KEY: randomBytes(20).toString('hex'),
      WEBHOOK_URL: 'https://hospital.example/results',
      WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
    });
    expect(await check.exited, check.lines.join('\n')).toBe(0);
    expect(check.lines.join('\n')).toContain('configuration is valid for start');
    // A rule naming a placeholder category is refused: the CCSR tables were read.
    const bad = cli(['--config', rulesConfig('XXX000'), 'config', 'check'], {});
    expect(await bad.exited).toBe(1);
    expect(bad.lines.join('\n')).toContain('presets.rules.0.ccsr_category');
  });

  it('reads every data file it ships: the CCSR tables, the ICD-10-CM descriptions, the embedded terminology', async () => {
    const module = (path: string) => pathToFileURL(join(copy, 'dist/src', path)).href;
    const script = `
      const ccsr = await import(${JSON.stringify(module('ccsr/ccsr-tables.js'))});
      const map = await import(${JSON.stringify(module('ccsr/icd10-ccsr-map.js'))});
      const names = await import(${JSON.stringify(module('ccsr/icd10-descriptions.js'))});
      const embedded = await import(${JSON.stringify(module('terminology/embedded-problem-map.js'))});
      const root = await import(${JSON.stringify(module('package-root.js'))});
      console.log(JSON.stringify({
        root: root.packageInfo().root.href,
        END002: ccsr.loadCcsrTables().isCategory('END002'),
        E119: map.ccsrCategoriesForIcd10('E11.9', 'all'),
        E119name: names.icd10Description('E11.9') ?? null,
        embeddedRows: embedded.embeddedMapRows().length,
      }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: tmpdir(),
    });
    const seen = JSON.parse(stdout) as Record<string, unknown>;
    expect(seen).toMatchObject({
      root: `${pathToFileURL(copy).href}/`,
      END002: true,
      E119: expect.arrayContaining(['END002']),
      E119name: 'Type 2 diabetes mellitus without complications',
    });
    expect(seen.embeddedRows).toBeGreaterThan(0);
  });

  it('simulator answers /healthz on its health port and SIGTERM ends it with 0', async () => {
    const port = await freePort();
    const simulator = cli(['simulator', '--port', '0'], { METRICS_PORT: String(port) });
    try {
      const health = await eventually(
        () =>
          fetch(`http://127.0.0.1:${port}/healthz`).then(
            async (r) => ({ status: r.status, body: await r.text() }),
            () => ({ status: 0, body: '' }),
          ),
        (a) => a.status !== 0 || simulator.child.exitCode !== null,
      );
      expect(health, simulator.lines.join('\n')).toEqual({ status: 200, body: '{"status":"ok"}' });
    } finally {
      await simulator.stop('SIGTERM');
    }
    expect(await simulator.exited).toBe(0);
  });
});
