import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { newOutboundKey, outboundConfigFile } from '../../support/outbound.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';

/** The test Redis's URL with an ACL user and password in it. */
function urlAs(user: string, password: string): string {
  const url = new URL(testRedisUrl());
  url.username = user;
  url.password = password;
  return url.toString();
}

const RIGHT = `right-${randomBytes(8).toString('hex')}`;
/** A wrong password: it must never show in the output. */
const PLANTED = `PLANTED-wrong-${randomBytes(8).toString('hex')}`;
const ALLOWED = `cwtest-refusal-${randomUUID()}`;
const DENIED = `cwtest-noperm-${randomUUID()}`;

let admin: Redis;
beforeAll(async () => {
  admin = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  await admin.call('ACL', 'SETUSER', ALLOWED, 'on', `>${RIGHT}`, '~*', '&*', '+@all');
  // Signs in, but may run nothing (not even the INFO of the ready check).
  await admin.call('ACL', 'SETUSER', DENIED, 'on', `>${RIGHT}`, '~*', '&*', '-@all');
});
afterAll(async () => {
  await admin.call('ACL', 'DELUSER', ALLOWED, DENIED);
  await admin.quit();
});

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function run(role: 'ingest' | 'work', redisUrl: string): Promise<CliProcess> {
  const redis = await isolatedRedis();
  cleanups.push(() => redis.cleanup());
  const proc = new CliProcess(['--config', outboundConfigFile(), role], {
    REDIS_URL: redisUrl,
    REDIS_PREFIX: redis.prefix,
    SERVICE_BASE_URL: 'http://127.0.0.1:9',
    SERVICE_API_KEY: randomBytes(20).toString('hex'),
    INGEST_TOKENS: randomBytes(24).toString('base64'),
    CROSSWALK_KEY: generateCrosswalkSecret(),
    OUTBOUND_KEY: newOutboundKey(),
    INGEST_PORT: '0',
    INGEST_HOST: '127.0.0.1',
    MLLP_PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
  });
  cleanups.push(() => proc.stop('SIGKILL'));
  return proc;
}

interface Line {
  level?: number;
  msg?: string;
  err?: { message?: string };
}
const parsed = (proc: CliProcess): Line[] =>
  proc.lines.flatMap((line) => {
    try {
      return [JSON.parse(line) as Line];
    } catch {
      return [];
    }
  });

/**
 * Waiting for Redis helps when it is away, never when it refuses who we are: a wrong password or
 * an ACL user without the commands we need ends the start-up with exit code 1 and one line that
 * names REDIS_URL (its password hidden), instead of "redis unreachable" forever.
 */
describe('Redis refusing our credentials at start-up', () => {
  it('the right password of the same ACL user serves (the control)', async () => {
    const proc = await run('ingest', urlAs(ALLOWED, RIGHT));
    await proc.waitForLine('ingest listening');
    expect(await proc.stop('SIGTERM'), proc.lines.join('\n')).toBe(0);
  });

  for (const role of ['ingest', 'work'] as const) {
    it(`${role}: a wrong password exits 1, naming REDIS_URL without the password`, async () => {
      const proc = await run(role, urlAs(ALLOWED, PLANTED));
      const code = await proc.exited;
      const output = proc.lines.join('\n');
      expect(code, output).toBe(1);
      const failed = parsed(proc).find((line) => line.msg === 'start-up failed');
      expect(failed?.level, output).toBe(50);
      expect(failed?.err?.message).toContain(
        `REDIS_URL (redis://${ALLOWED}:***@${new URL(testRedisUrl()).host})`,
      );
      expect(failed?.err?.message).toContain('WRONGPASS');
      expect(output).toContain('redis refused our credentials or permissions');
      expect(output).not.toContain('redis unreachable');
      expect(output).not.toContain(PLANTED);
    });
  }

  it('an ACL user without permissions (NOPERM) exits 1 the same way', async () => {
    const proc = await run('ingest', urlAs(DENIED, RIGHT));
    const code = await proc.exited;
    const output = proc.lines.join('\n');
    expect(code, output).toBe(1);
    const failed = parsed(proc).find((line) => line.msg === 'start-up failed');
    expect(failed?.err?.message).toContain(`REDIS_URL (redis://${DENIED}:***@`);
    expect(failed?.err?.message).toContain('NOPERM');
    expect(output).not.toContain(RIGHT);
  });
});
