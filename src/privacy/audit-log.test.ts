import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../identity/crosswalk-keys.ts';
import { createLogger } from '../observability/logger.ts';
import type { AuditEntry } from './audit-entry.ts';
import { AuditLog } from './audit-log.ts';
import { auditPatientRef } from './patient-reference.ts';

let env: Awaited<ReturnType<typeof isolatedRedis>>;
let lines: string[];
beforeEach(async () => {
  env = await isolatedRedis();
  lines = [];
});
afterEach(() => env.cleanup());

const logger = () =>
  createLogger({
    name: 'test',
    destination: new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    }),
  });

const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
const entry = (over: Partial<AuditEntry> = {}): AuditEntry => ({
  action: 'purge',
  actor: 'admin-token#1',
  at: '2026-11-20T08:00:00.000Z',
  patient_ref: auditPatientRef(keys, 'MRN-1'),
  outcome: 'done',
  counts: { record: 1, presets: 2 },
  request_id: 'req-1',
  ...over,
});

describe('AuditLog', () => {
  it('appends to the ${prefix}:audit stream, logs one `audit` line per entry, and reads them back in order', async () => {
    const audit = new AuditLog({ redis: env.redis, prefix: env.prefix, logger: logger() });
    const first = await audit.append(entry());
    const second = await audit.append(entry({ action: 'opt_out', request_id: 'req-2' }));
    expect(await env.redis.type(`${env.prefix}:audit`)).toBe('stream');
    expect(await audit.list()).toEqual([first, second]);
    expect(first).toMatchObject(entry());
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[1] ?? '')).toMatchObject({
      msg: 'audit',
      audit: { id: second.id, action: 'opt_out', request_id: 'req-2', outcome: 'done' },
    });
  });

  it('filters by time and by patient reference', async () => {
    const audit = new AuditLog({ redis: env.redis, prefix: env.prefix });
    const a = await audit.append(entry());
    const b = await audit.append(entry({ patient_ref: auditPatientRef(keys, 'MRN-2') }));
    const since = new Date(Number(b.id.split('-')[0]));
    expect((await audit.list({ since })).map((e) => e.id)).toContain(b.id);
    expect((await audit.list({ since: new Date(Date.now() + 60_000) })).length).toBe(0);
    expect(
      (await audit.list({ patientRef: auditPatientRef(keys, 'MRN-1') })).map((e) => e.id),
    ).toEqual([a.id]);
  });

  it('refuses an entry whose patient reference is not an HMAC (a local id in clear), and stores nothing', async () => {
    const audit = new AuditLog({ redis: env.redis, prefix: env.prefix });
    await expect(audit.append(entry({ patient_ref: 'MRN-PLANTED-1' }))).rejects.toThrow();
    await expect(audit.append(entry({ actor: '' }))).rejects.toThrow();
    expect(await env.redis.exists(`${env.prefix}:audit`)).toBe(0);
  });

  it('is bounded: MAXLEN ~ keeps at least max_entries and trims the oldest', async () => {
    const audit = new AuditLog({ redis: env.redis, prefix: env.prefix, maxEntries: 1_000 });
    const pipeline = env.redis.pipeline();
    for (let i = 0; i < 1_499; i += 1) {
      pipeline.xadd(
        `${env.prefix}:audit`,
        '*',
        'entry',
        JSON.stringify(entry({ request_id: `r${i}` })),
      );
    }
    await pipeline.exec();
    await audit.append(entry({ request_id: 'last' }));
    const length = await env.redis.xlen(`${env.prefix}:audit`);
    expect(length).toBeGreaterThanOrEqual(1_000);
    expect(length).toBeLessThan(1_500);
    const listed = await audit.list();
    expect(listed.at(-1)?.request_id).toBe('last');
    expect(listed[0]?.request_id).not.toBe('r0');
  });
});
