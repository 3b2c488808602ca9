/**
 * `npm run chaos`: the chaos suite. Real processes (`ingest`, `work`, `simulator`, a private
 * redis-server behind a TCP proxy, a signature-checking webhook receiver), faults injected while
 * updates flow, and figures per scenario. Progress goes to stderr; stdout gets exactly one line,
 * the JSON document (also written to chaos-output/chaos.json), so `npm run -s chaos | jq .` works.
 *
 *   node chaos/run-chaos.ts [--quick] [--only a,b] [--out FILE] [--log-level LEVEL]
 *
 * Exit code: 0 when every scenario passed (0 lost, 0 unacknowledged, 0 rejected, every check
 * held); with `--quick`, a failing scenario marked `known_defect` in the scenario table does not
 * count (the JSON says so); 1 otherwise; 2 for bad arguments.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Cleanup } from '../bench/support/processes.ts';
import { SCENARIOS } from './scenarios/scenario-table.ts';
import { CHAOS_CONFIG } from './support/chaos-stack.ts';
import { SENDER_TIMINGS, type ScenarioContext } from './support/scenario.ts';
import { verdictOf, type ScenarioReport } from './support/verdict.ts';

const USAGE = `usage: node chaos/run-chaos.ts [options]
  --quick             small counts and 5 s outages (what CI runs; a few minutes)
  --only LIST         scenarios to run, comma-separated: ${SCENARIOS.map((s) => s.name).join(',')}
  --log-level LEVEL   LOG_LEVEL of the pipeline processes (default warn)
  --out FILE          where the JSON goes too (default chaos-output/chaos.json)`;

function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        quick: { type: 'boolean', default: false },
        only: { type: 'string' },
        'log-level': { type: 'string', default: 'warn' },
        out: { type: 'string', default: 'chaos-output/chaos.json' },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  const only = values.only?.split(',').map((s) => s.trim());
  const unknown = only?.filter((name) => !SCENARIOS.some((s) => s.name === name)) ?? [];
  if (unknown.length > 0) {
    process.stderr.write(`unknown scenario ${unknown.join(', ')}\n${USAGE}\n`);
    return 2;
  }
  // Each scenario runs its own redis-server behind the proxy: the shared Redis will not do.
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    process.stderr.write(
      'chaos: needs the redis-server binary on PATH (scripts/ensure-redis.sh installs it)\n',
    );
    return 1;
  }
  const selected = SCENARIOS.filter((s) => only === undefined || only.includes(s.name));

  const started = Date.now();
  const cleanup = new Cleanup();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) process.exit(130);
    interrupted = true;
    process.stderr.write(`\nchaos: ${signal}: stopping everything it started\n`);
    void cleanup.run().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const tmpDir = mkdtempSync(join(os.tmpdir(), 'cwchaos-'));
  cleanup.add('temporary directory', async () => rmSync(tmpDir, { recursive: true, force: true }));
  const say = (message: string) =>
    process.stderr.write(
      `[chaos ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`,
    );
  const out = resolve(values.out);
  const ctx: ScenarioContext = {
    cleanup,
    logDir: dirname(out),
    tmpDir,
    quick: values.quick,
    logLevel: values['log-level'],
    runId: randomBytes(3).toString('hex'),
    say,
  };

  const reports: ScenarioReport[] = [];
  try {
    for (const scenario of selected) {
      const t0 = Date.now();
      try {
        const outcome = await scenario.run(ctx);
        reports.push(verdictOf(scenario, outcome, values.quick));
      } catch (err) {
        say(`${scenario.name}: could not run: ${(err as Error).stack ?? String(err)}`);
        reports.push(verdictOf(scenario, err as Error, values.quick));
      }
      const last = reports.at(-1);
      say(
        `${scenario.name}: ${last?.pass ? 'pass' : 'FAIL'} in ${((Date.now() - t0) / 1000).toFixed(0)} s` +
          (last?.figures
            ? ` (lost ${last.figures.lost}, unacknowledged ${last.figures.unacknowledged})`
            : ''),
      );
    }
  } finally {
    await cleanup.run();
  }

  const failing = reports.filter((r) => !r.pass);
  const counted = failing.filter((r) => r.counts_as_failure);
  const document = {
    suite: 'concordance-worker chaos',
    mode: values.quick ? 'quick' : 'full',
    started_at: new Date(started).toISOString(),
    wall_seconds: Math.round((Date.now() - started) / 100) / 10,
    command: `node chaos/run-chaos.ts ${process.argv.slice(2).join(' ')}`.trim(),
    commit: gitCommit(),
    machine: {
      cpus: os.cpus().length,
      node: process.version,
      load_average_at_end: os.loadavg().map((l) => Math.round(l * 100) / 100),
    },
    pipeline_config: CHAOS_CONFIG,
    sender: SENDER_TIMINGS,
    scenarios: reports,
    summary: {
      scenarios: reports.length,
      passed: reports.length - failing.length,
      failed: failing.map((r) => r.name),
      failed_known_defects: failing
        .filter((r) => !r.counts_as_failure)
        .map((r) => ({ name: r.name, known_defect: r.known_defect })),
      sent: reports.reduce((sum, r) => sum + (r.figures?.sent ?? 0), 0),
      acknowledged: reports.reduce((sum, r) => sum + (r.figures?.acknowledged ?? 0), 0),
      lost: reports.reduce((sum, r) => sum + (r.figures?.lost ?? 0), 0),
      unacknowledged: reports.reduce((sum, r) => sum + (r.figures?.unacknowledged ?? 0), 0),
      duplicate_submissions: reports.reduce(
        (sum, r) => sum + (r.figures?.duplicate_submissions ?? 0),
        0,
      ),
      duplicate_deliveries: reports.reduce(
        (sum, r) => sum + (r.figures?.duplicate_deliveries ?? 0),
        0,
      ),
      exit_code: counted.length === 0 ? 0 : 1,
      rule: values.quick
        ? 'quick: exit 0 when every scenario passed or failed only with a known_defect mark'
        : 'full: exit 0 only when every scenario passed',
    },
  };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
  say(`JSON in ${out}`);
  process.stdout.write(`${JSON.stringify(document)}\n`);
  return document.summary.exit_code;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `chaos failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
