import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
} from '../../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../../src/identity/crosswalk.ts';
import { AuditLog } from '../../../src/privacy/audit-log.ts';
import { auditPatientRef } from '../../../src/privacy/patient-reference.ts';
import type { Partitions } from '../../../src/queues/partitions.ts';
import { sealTraceRaw } from '../../../src/trace/trace-raw.ts';
import { cli, jsonOf } from '../cli/support/run-cli.ts';
import { testRedisUrl } from '../../support/redis.ts';
import { receipt, seedMessageWithQuery, seedReceipt, T0, twoPartitions } from './read-seed.ts';

const LOCAL = 'MRN-TRACE-CLI-PLANTED-0c7d';
const MESSAGE = `MSH|^~\\&|EPIC|MAIN|||20261120080000||ADT^A08|MSG-1|P|2.5\rPID|1||${LOCAL}`;

let env: Awaited<ReturnType<typeof twoPartitions>>['env'];
let secret: string;
let psid: string;
let sealed: string;

beforeEach(async () => {
  let partitions: Partitions;
  ({ env, partitions } = await twoPartitions());
  secret = generateCrosswalkSecret();
  const keys = deriveCrosswalkKeys(secret);
  psid = (await new Crosswalk({ redis: env.redis, prefix: partitions, keys }).resolve(LOCAL))
    .patientServiceId;
  const p = partitions.prefixOf(psid);
  sealed = sealTraceRaw(keys, 'MSG-1', MESSAGE);
  const query = { category: 'END002', seq: 1, eventId: 'EV-1' };
  await seedMessageWithQuery(env.redis, p, 'MSG-1', { psid, version: 1, raw: sealed }, query);
  await seedReceipt(
    env.redis,
    p,
    'MSG-1',
    receipt({ at: T0 + 60_000, psid, version: 1, state: 'duplicate' }),
  );
  await seedReceipt(env.redis, p, 'MSG-2', receipt({ at: T0 + 120_000, psid, version: 2 }));
});
afterEach(() => env.cleanup());

const cliEnv = (withKey = true) => ({
  REDIS_URL: testRedisUrl(),
  REDIS_PREFIX: env.prefix,
  REDIS_PARTITIONS: '2',
  LOG_LEVEL: 'warn',
  ...(withKey ? { CROSSWALK_KEY: secret } : {}),
});

const audit = () => new AuditLog({ redis: env.redis, prefix: env.prefix }).list();

describe('concordance-worker trace', () => {
  it('prints each receipt’s steps by control id (no key needed), JSON with --json, never the message', async () => {
    const [text, json, none, neither, both] = await Promise.all([
      cli(['trace', 'MSG-1'], cliEnv(false)),
      cli(['trace', 'MSG-1', '--json'], cliEnv(false)),
      cli(['trace', 'NOPE'], cliEnv(false)),
      cli(['trace'], cliEnv(false)),
      cli(['trace', 'MSG-1', '--patient', LOCAL], cliEnv()),
    ]);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toBe('control id MSG-1: 2 receipt(s)');
    expect(lines[2]).toMatch(/^receipt 1 of 2 \(partition \d, message kept sealed\)$/);
    expect(text.stdout).toMatch(/2026-11-20T08:00:00\.000Z +answer +AA +hl7v2-mllp ADT\^A08/);
    expect(text.stdout).toMatch(/2026-11-20T08:00:10\.000Z +result +completed +ended completed/);
    expect(text.stdout).toMatch(/2026-11-20T08:00:12\.000Z +delivery +delivered/);
    expect(text.stdout).toContain('receipt 2 of 2');
    expect(text.stdout).not.toContain(LOCAL);
    expect(text.stdout).not.toContain(sealed);

    expect(json.code).toBe(0);
    const trace = jsonOf<{ receipts: Record<string, unknown>[] }>(json);
    expect(trace.receipts.map((r) => [r.state, r.has_raw, 'raw' in r])).toEqual([
      ['queued', true, false],
      ['duplicate', false, false],
    ]);

    expect(none.code).toBe(1);
    expect(none.stderr).toContain('concordance-worker: no trace of control id NOPE');
    expect(neither.code).toBe(2);
    expect(both.code).toBe(2);
    expect(await audit()).toEqual([]);
  });

  it('--raw opens the sealed message with the crosswalk key, audited; refused without one kept or without the key', async () => {
    const raw = await cli(['trace', 'MSG-1', '--raw'], cliEnv());
    expect(raw.code, raw.stderr).toBe(0);
    expect(raw.stdout).toContain('  message as received:');
    expect(raw.stdout).toContain(`    PID|1||${LOCAL}`);
    const rawJson = await cli(['trace', 'MSG-1', '--raw', '--json'], cliEnv());
    const receipts = jsonOf<{ receipts: Record<string, unknown>[] }>(rawJson).receipts;
    expect(receipts[0]?.message).toBe(MESSAGE);
    expect(receipts[0]).not.toHaveProperty('raw');
    expect((await audit()).map((e) => [e.action, e.outcome, e.counts])).toEqual([
      ['show_raw', 'done', { raw_messages: 1, unreadable: 0 }],
      ['show_raw', 'done', { raw_messages: 1, unreadable: 0 }],
    ]);

    const [noneKept, noKey] = await Promise.all([
      cli(['trace', 'MSG-2', '--raw'], cliEnv()),
      cli(['trace', 'MSG-1', '--raw'], cliEnv(false)),
    ]);
    expect(noneKept.code).toBe(1);
    expect(noneKept.stderr).toContain('no receipt of control id MSG-2 holds the message');
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toContain('CROSSWALK_KEY is not set');
    expect(noKey.stdout).toBe('');
    expect(await audit()).toHaveLength(2);
  });

  it('--patient (from standard input) lists the patient’s messages newest first, audited; an unknown patient exits 1, audited', async () => {
    const text = await cli(['trace', '--patient', '-'], cliEnv(), `${LOCAL}\n`);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toBe(`patient_service_id ${psid}: 2 message(s), newest first`);
    expect(lines.filter((l) => l.startsWith('control id '))).toEqual([
      'control id MSG-2: 1 receipt(s)',
      'control id MSG-1: 2 receipt(s)',
    ]);
    expect(text.stdout).toMatch(/audit request id \S+/);
    expect(text.stdout).not.toContain(LOCAL);

    const json = await cli(['trace', '--patient', LOCAL, '--json', '--limit', '1'], cliEnv());
    expect(jsonOf<{ messages: { control_id: string }[] }>(json).messages).toEqual([
      expect.objectContaining({ control_id: 'MSG-2' }),
    ]);

    const unknown = await cli(['trace', '--patient', 'MRN-NEVER-SEEN-1'], cliEnv());
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown patient: nothing to show \(audit request id \S+\)/);
    expect(unknown.stderr).not.toContain('MRN-NEVER-SEEN-1');

    const ref = auditPatientRef(deriveCrosswalkKeys(secret), LOCAL);
    expect(
      (await audit()).map((e) => [e.action, e.outcome, e.patient_ref === ref, e.counts]),
    ).toEqual([
      ['read_trace', 'done', true, { messages: 2 }],
      ['read_trace', 'done', true, { messages: 1 }],
      ['read_trace', 'unknown_patient', false, {}],
    ]);
  });
});
