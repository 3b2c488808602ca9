import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
} from '../../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../../src/identity/crosswalk.ts';
import { AuditLog } from '../../../src/privacy/audit-log.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { cli, jsonOf } from '../cli/support/run-cli.ts';

/** Planted ids: markers that must not appear in any output without --show. */
const ID = 'MRN-DUP-PLANTED-5c1e';
const OTHER = 'MRN-ALONE-PLANTED-9a2f';

let env: Awaited<ReturnType<typeof isolatedRedis>>;
let secret: string;
beforeEach(async () => {
  env = await isolatedRedis();
  secret = generateCrosswalkSecret();
  const crosswalk = new Crosswalk({
    redis: env.redis,
    prefix: env.prefix,
    keys: deriveCrosswalkKeys(secret),
  });
  // One person twice (HL7 v2 keyed with its authority, and the MRN alone), one other patient,
  // and an id of another authority whose id alone is nobody: not a duplicate.
  for (const id of [`GOODHEALTH|${ID}`, ID, OTHER, `LAB|${OTHER}-X`]) await crosswalk.resolve(id);
});
afterEach(() => env.cleanup());

const run = (...args: string[]) =>
  cli(['patient', 'duplicates', ...args], {
    REDIS_URL: testRedisUrl(),
    REDIS_PREFIX: env.prefix,
    CROSSWALK_KEY: secret,
    LOG_LEVEL: 'info',
  });

describe('concordance-worker patient duplicates', () => {
  it('counts a patient keyed `<authority>|X` beside `X` once, printing no id', async () => {
    const text = await run();
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('patients: 4');
    expect(text.stdout).toContain('probable duplicates: 1');
    expect(text.stdout).toContain('authority GOODHEALTH: 1');
    const json = await run('--json');
    expect(jsonOf(json)).toEqual({
      patients: 4,
      probable_duplicates: 1,
      by_authority: { GOODHEALTH: 1 },
      unreadable: 0,
    });
    for (const out of [text, json]) {
      expect(`${out.stdout}${out.stderr}`).not.toContain('PLANTED');
    }
    // Reads only: nothing audited without --show.
    expect(await new AuditLog({ redis: env.redis, prefix: env.prefix }).list()).toEqual([]);
  });

  it('prints the pair with --show, and audits that it did (without the ids)', async () => {
    const shown = await run('--show', '--json');
    expect(shown.code).toBe(0);
    expect(jsonOf<{ pairs: unknown }>(shown).pairs).toEqual([
      { qualified: `GOODHEALTH|${ID}`, bare: ID },
    ]);
    const entries = await new AuditLog({ redis: env.redis, prefix: env.prefix }).list();
    expect(entries).toMatchObject([
      { action: 'show_duplicates', outcome: 'done', counts: { probable_duplicates: 1 } },
    ]);
    expect(JSON.stringify(entries)).not.toContain('PLANTED');
  });

  it('leaves out a patient merged into another', async () => {
    const crosswalk = new Crosswalk({
      redis: env.redis,
      prefix: env.prefix,
      keys: deriveCrosswalkKeys(secret),
    });
    const retired = (await crosswalk.find(`GOODHEALTH|${ID}`)) as string;
    await env.redis.set(crosswalk.retiredKeyOf(retired), (await crosswalk.find(ID)) as string);
    expect(jsonOf(await run('--json'))).toMatchObject({ patients: 3, probable_duplicates: 0 });
  });
});
