import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { userInfo } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
} from '../../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../../src/identity/crosswalk.ts';
import { PresetStore } from '../../../src/presets/preset-store.ts';
import { RecordStore } from '../../../src/records/record-store.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { samplePatient } from '../../support/sample-patient.ts';

const LOCAL = 'MRN-CLI-PLANTED-3b8e';
const MAIN = new URL('../../../src/cli/main.ts', import.meta.url).pathname;

let env: Awaited<ReturnType<typeof isolatedRedis>>;
let secret: string;
const output: string[] = [];

beforeEach(async () => {
  env = await isolatedRedis();
  secret = generateCrosswalkSecret();
});
afterEach(() => env.cleanup());

const cliEnv = () => ({
  REDIS_URL: testRedisUrl(),
  REDIS_PREFIX: env.prefix,
  CROSSWALK_KEY: secret,
  LOG_LEVEL: 'info',
});

async function cli(
  ...args: string[]
): Promise<{ code: number | null; stdout: string[]; lines: string[] }> {
  const run = new CliProcess(args, cliEnv());
  const code = await run.exited;
  output.push(...run.lines);
  return { code, stdout: run.stdout, lines: run.lines };
}

/** The CLI with `input` on its standard input (`--patient-id -`). */
async function cliWithInput(input: string, ...args: string[]) {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...cliEnv() },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stdin.end(input);
  const [code] = (await once(child, 'exit')) as [number | null];
  output.push(text);
  return { code, text };
}

describe('concordance-worker patient and audit', () => {
  it('opts out, opts in and purges a patient, refuses a purge without --yes, and lists the audit trail', async () => {
    const keys = deriveCrosswalkKeys(secret);
    const crosswalk = new Crosswalk({ redis: env.redis, prefix: env.prefix, keys });
    const { patientServiceId: psid } = await crosswalk.resolve(LOCAL);
    await new PresetStore({ redis: env.redis, prefix: env.prefix }).put(
      psid,
      'END002',
      'registered',
    );
    await new RecordStore({ redis: env.redis, prefix: env.prefix, keys }).put(psid, samplePatient);

    const out = await cli('patient', 'opt-out', '--patient-id', LOCAL);
    expect(out.code, out.lines.join('\n')).toBe(0);
    expect(out.stdout[0]).toMatch(
      new RegExp(`^opted out since \\S+ \\(patient_service_id ${psid}\\); 0 waiting`),
    );
    expect(await env.redis.exists(`${env.prefix}:optout:${psid}`)).toBe(1);

    const optIn = await cli('patient', 'opt-in', '--patient-id', LOCAL, '--json');
    expect(optIn.code).toBe(0);
    expect(JSON.parse(optIn.stdout.join('\n'))).toMatchObject({
      patient_service_id: psid,
      was_opted_out: true,
    });
    expect(await env.redis.exists(`${env.prefix}:optout:${psid}`)).toBe(0);

    const refused = await cli('patient', 'purge', '--patient-id', LOCAL);
    expect(refused.code).toBe(1);
    expect(refused.lines.join('\n')).toContain('refusing to purge without --yes');
    expect(await crosswalk.find(LOCAL)).toBe(psid);

    const purged = await cliWithInput(
      `${LOCAL}\n`,
      'patient',
      'purge',
      '--patient-id',
      '-',
      '--yes',
    );
    expect(purged.code, purged.text).toBe(0);
    expect(purged.text).toMatch(/purged: .*presets 1.*record 1.*crosswalk 1/);
    expect(purged.text).toContain('"msg":"audit"');
    expect(await crosswalk.find(LOCAL)).toBeUndefined();
    expect(
      await env.redis.exists(`${env.prefix}:rec:${psid}`, `${env.prefix}:presets:${psid}`),
    ).toBe(0);

    const again = await cli('patient', 'purge', '--patient-id', LOCAL, '--yes');
    expect(again.code).toBe(1);
    expect(again.lines.join('\n')).toMatch(
      /unknown patient: nothing changed \(audit request id [0-9a-f-]{36}\)/,
    );

    const listed = await cli('audit', 'list', '--json');
    expect(listed.code).toBe(0);
    const entries = JSON.parse(listed.stdout.join('\n')) as Record<string, unknown>[];
    const actor = `cli:${userInfo().username}`;
    expect(entries.map((e) => [e.action, e.outcome, e.actor])).toEqual([
      ['opt_out', 'done', actor],
      ['opt_in', 'done', actor],
      ['purge', 'done', actor],
      ['purge', 'unknown_patient', actor],
    ]);

    const mine = await cli('audit', 'list', '--patient-id', LOCAL);
    expect(mine.stdout.at(-1)).toBe('4 entries');
    const other = await cli('audit', 'list', '--patient-id', 'MRN-SOMEONE-ELSE');
    expect(other.stdout.at(-1)).toBe('0 entries');
    const later = await cli(
      'audit',
      'list',
      '--since',
      new Date(Date.now() + 60_000).toISOString(),
    );
    expect(later.stdout.at(-1)).toBe('0 entries');

    // The hospital's id went in on the command line only: no output or log line carries it,
    // and nothing in Redis names the purged patient any more.
    for (const line of output) expect(line).not.toContain(LOCAL);
    const everything = await env.redis.keys(`${env.prefix}*`);
    for (const key of everything) expect(key).not.toContain(psid);
    const stream = JSON.stringify(await env.redis.xrange(`${env.prefix}:audit`, '-', '+'));
    expect(stream).not.toContain(psid);
    expect(stream).not.toContain(LOCAL);
  });
});
