import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../../../src/app/compose-app.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { readBackupHeader } from '../../../src/identity/backup-file.ts';
import { backupKeyFrom } from '../../../src/identity/backup-key.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { captureLogs } from '../../support/log-capture.ts';
import { testRedisUrl } from '../../support/redis.ts';
import { samplePatient } from '../../support/sample-patient.ts';
import { AUTH, JSON_AUTH, startHarness, type Harness } from '../ingest/support/ingest-harness.ts';
import { NO_PERSISTENCE, startSpareRedis, type SpareRedis } from './support/spare-redis.ts';

/** The hospital's id of the known patient: it must not appear in the file or any output. */
const LOCAL_ID = 'MRN-BACKUP-PLANTED-4471';

/** `concordance-worker redis <args>` against `redisUrl` under the harness's prefix. */
async function redisCli(
  h: Harness,
  redisUrl: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; all: string }> {
  const cli = new CliProcess(['redis', ...args], {
    REDIS_URL: redisUrl,
    REDIS_PREFIX: h.prefix,
    ...env,
  });
  const code = await cli.exited;
  return { code, stdout: cli.stdout.join('\n'), all: cli.lines.join('\n') };
}

describe('redis backup and restore', () => {
  let h: Harness;
  let spare: SpareRedis;
  let target: Redis;
  let dir: string;
  let secret: string;
  let psid: string;

  beforeAll(async () => {
    h = await startHarness({ rules: [{ ccsr_category: 'CIR007' }] });
    secret = h.config.identity.crosswalk_key as string;
    spare = await startSpareRedis(NO_PERSISTENCE);
    target = new Redis(spare.url, { maxRetriesPerRequest: 1 });
    dir = mkdtempSync(join(tmpdir(), 'cw-backup-test-'));

    // The known patient: a preset, then a record update through ingest; the service id it gets.
    const preset = await h.app.inject({
      method: 'PUT',
      url: `/v1/patients/${LOCAL_ID}/presets/END002`,
      headers: AUTH,
    });
    expect(preset.statusCode).toBe(201);
    const update = await h.app.inject({
      method: 'POST',
      url: '/v1/record-updates',
      headers: JSON_AUTH,
      payload: JSON.stringify({
        patient_id: LOCAL_ID,
        event_id: 'evt-backup-1',
        source: 'mirth',
        occurred_at: '2026-03-01T10:00:00+01:00',
        assembled_patient: samplePatient,
        changes: ['condition'],
      }),
    });
    expect(update.statusCode).toBe(202);
    psid = (update.json() as { patient_service_id: string }).patient_service_id;
    expect(await h.crosswalk.find(LOCAL_ID)).toBe(psid);
    // A key that expires (as records do under a retention period): its expiry must come back.
    await h.inspect.pexpireat(`${h.prefix}:rec:${psid}`, Date.now() + 3_600_000);
  });
  afterAll(async () => {
    target?.disconnect();
    await spare?.stop();
    await h?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('backs up, refuses a wrong key, restores into an empty Redis where the patient keeps its service id', async () => {
    const file = join(dir, 'pipeline.cwbackup');
    const backup = await redisCli(h, testRedisUrl(), ['backup', '--out', file], {
      CROSSWALK_KEY: secret,
    });
    expect(backup.code, backup.all).toBe(0);
    expect(backup.stdout).toContain(`key id ${backupKeyFrom(secret).id}`);

    // Sealed: neither the local id nor the service id is in the file's bytes.
    const bytes = readFileSync(file);
    const text = bytes.toString('latin1');
    expect(text).not.toContain(LOCAL_ID);
    expect(text).not.toContain(psid);
    const header = readBackupHeader(bytes);
    expect(header).toMatchObject({ prefix: h.prefix, partitions: 1, left_out: 0 });
    expect(header.keys[0]).toMatchObject({ xw: 1, xwr: 1, rec: 1, presets: 1 });

    // The header is read without any key.
    const info = await redisCli(h, testRedisUrl(), ['backup-info', '--in', file]);
    expect(info.code, info.all).toBe(0);
    expect(info.stdout).toContain(`key id ${header.key_id}`);

    // Another CROSSWALK_KEY: refused with ERR_BACKUP_KEY naming the key needed; nothing written.
    const wrong = await redisCli(h, spare.url, ['restore', '--in', file], {
      CROSSWALK_KEY: generateCrosswalkSecret(),
    });
    expect(wrong.code).toBe(1);
    expect(wrong.all).toContain('ERR_BACKUP_KEY');
    expect(wrong.all).toContain(header.key_id);
    expect(await target.dbsize()).toBe(0);

    // After a rotation began, the keyring opens a backup sealed under a key it still holds.
    const restore = await redisCli(h, spare.url, ['restore', '--in', file], {
      CROSSWALK_KEYS: `k1:${generateCrosswalkSecret()},0:${secret}`,
    });
    expect(restore.code, restore.all).toBe(0);
    expect(restore.stdout).toContain('keys restored: 4');

    // On the restored Redis, the pipeline's own stores (built as ingest builds them) find the
    // patient under the same service id, and its record and presets.
    const restored = App.compose(h.config, captureLogs().logger, { redis: target });
    expect(await restored.crosswalk.find(LOCAL_ID)).toBe(psid);
    expect(await restored.crosswalk.resolve(LOCAL_ID)).toEqual({
      patientServiceId: psid,
      created: false,
    });
    expect(await restored.crosswalk.localIdOf(psid)).toBe(LOCAL_ID);
    expect(await restored.records.get(psid)).toEqual(await h.records.get(psid));
    expect(await restored.presets.list(psid)).toEqual(await h.presets.list(psid));
    // The expiry came back as it was (absolute), the keys without one have none.
    const key = `${h.prefix}:rec:${psid}`;
    expect(await target.pexpiretime(key)).toBe(await h.inspect.pexpiretime(key));
    expect(await target.pexpiretime(`${h.prefix}:presets:${psid}`)).toBe(-1);

    // The target is not empty any more: refused, unless --force.
    const again = await redisCli(h, spare.url, ['restore', '--in', file], {
      CROSSWALK_KEY: secret,
    });
    expect(again.code).toBe(1);
    expect(again.all).toContain('ERR_BACKUP_TARGET_NOT_EMPTY');
    const forced = await redisCli(h, spare.url, ['restore', '--in', file, '--force'], {
      CROSSWALK_KEY: secret,
    });
    expect(forced.code, forced.all).toBe(0);
    expect(await restored.crosswalk.find(LOCAL_ID)).toBe(psid);

    // No command printed the patient's ids.
    for (const output of [backup, info, wrong, restore, again, forced]) {
      expect(output.all).not.toContain(LOCAL_ID);
      expect(output.all).not.toContain(psid);
    }
  });

  it('refuses to write over an existing file, and a backup of another prefix', async () => {
    const file = join(dir, 'second.cwbackup');
    const first = await redisCli(h, testRedisUrl(), ['backup', '--out', file], {
      CROSSWALK_KEY: secret,
    });
    expect(first.code, first.all).toBe(0);
    const before = readFileSync(file);
    const second = await redisCli(h, testRedisUrl(), ['backup', '--out', file], {
      CROSSWALK_KEY: secret,
    });
    expect(second.code).not.toBe(0);
    expect(readFileSync(file).equals(before)).toBe(true);

    const elsewhere = new CliProcess(['redis', 'restore', '--in', file, '--force'], {
      REDIS_URL: spare.url,
      REDIS_PREFIX: '{cw-other}',
      CROSSWALK_KEY: secret,
    });
    expect(await elsewhere.exited).toBe(1);
    expect(elsewhere.lines.join('\n')).toContain('ERR_BACKUP_LAYOUT');
  });
});
