import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  describePersistence,
  logRedisPersistence,
  redisPersistence,
} from '../../../src/queues/redis-persistence.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { captureLogs } from '../../support/log-capture.ts';
import { testRedisUrl } from '../../support/redis.ts';
import { startSpareRedis, type SpareRedis } from './support/spare-redis.ts';

/** The password of the restricted ACL users (nothing else is secret here). */
const PASSWORD = 'persistence-test-password-0123';

/** `config check` against `redisUrl` (the secrets it needs set, so that the run is valid). */
async function configCheck(redisUrl: string): Promise<{ code: number | null; output: string }> {
  const cli = new CliProcess(['config', 'check', '--role', 'ingest'], {
    REDIS_URL: redisUrl,
    CROSSWALK_KEY: generateCrosswalkSecret(),
    INGEST_TOKENS: randomBytes(24).toString('base64url'),
  });
  const code = await cli.exited;
  return { code, output: cli.stdout.join('\n') };
}

describe('whether Redis keeps its data on disk', () => {
  let aof: SpareRedis;
  let rdb: SpareRedis;
  const clients: Redis[] = [];
  const client = (
    url: string,
    options: { username?: string; password?: string; enableReadyCheck?: boolean } = {},
  ) => {
    const redis = new Redis(url, { maxRetriesPerRequest: 1, ...options });
    clients.push(redis);
    return redis;
  };

  beforeAll(async () => {
    [aof, rdb] = await Promise.all([
      startSpareRedis(['--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '']),
      startSpareRedis(['--appendonly', 'no', '--save', '3600 1 300 100']),
    ]);
    // Users the ACL refuses CONFIG (INFO still allowed), and CONFIG and INFO both.
    const admin = client(aof.url);
    await admin.acl('SETUSER', 'noconfig', 'on', `>${PASSWORD}`, '~*', '&*', '+@all', '-config');
    await admin.acl(
      'SETUSER',
      'nothing',
      'on',
      `>${PASSWORD}`,
      '~*',
      '&*',
      '+@all',
      '-config',
      '-info',
    );
  });
  afterAll(async () => {
    for (const redis of clients) redis.disconnect();
    await Promise.all([aof?.stop(), rdb?.stop()]);
  });

  it('finds that the local test Redis keeps nothing, and says so as a warning', async () => {
    const report = await redisPersistence(client(testRedisUrl()));
    expect(report.verdict).toBe('none');
    expect(report.nodes).toHaveLength(1);
    expect(report.nodes[0]).toMatchObject({ aof: false, rdb: false, save: '' });
    expect(describePersistence(report)).toMatch(/^Redis keeps nothing on disk: a restart loses/);

    const logs = captureLogs('info');
    await logRedisPersistence(client(testRedisUrl()), logs.logger);
    const entry = await logs.waitFor((e) => e.redis_persistence !== undefined);
    expect(entry).toMatchObject({ level: 40, redis_persistence: 'none' });
    expect(String(entry.msg)).toContain('docs/backup-and-recovery.md');
  });

  it('finds AOF (with its fsync) on a server started with --appendonly yes, and logs it as info', async () => {
    const report = await redisPersistence(client(aof.url));
    expect(report.verdict).toBe('persists');
    expect(report.nodes[0]).toMatchObject({ aof: true, fsync: 'everysec', rdb: false });
    expect(describePersistence(report)).toBe('Redis keeps its data on disk: AOF (everysec)');

    const logs = captureLogs('info');
    await logRedisPersistence(client(aof.url), logs.logger);
    const entry = await logs.waitFor((e) => e.redis_persistence !== undefined);
    expect(entry).toMatchObject({ level: 30, redis_persistence: 'persists' });
  });

  it('finds RDB save points on a server started with --save', async () => {
    const report = await redisPersistence(client(rdb.url));
    expect(report.verdict).toBe('persists');
    expect(report.nodes[0]).toMatchObject({ aof: false, rdb: true, save: '3600 1 300 100' });
    expect(describePersistence(report)).toBe(
      'Redis keeps its data on disk: RDB (save 3600 1 300 100)',
    );
  });

  it('falls back to INFO persistence when the ACL refuses CONFIG', async () => {
    const report = await redisPersistence(
      client(aof.url, { username: 'noconfig', password: PASSWORD }),
    );
    expect(report.verdict).toBe('persists');
    expect(report.nodes[0]).toMatchObject({ aof: true });
    expect(report.nodes[0]?.unknown).toContain('NOPERM');
  });

  it('says it cannot tell, as info, when the ACL refuses CONFIG and INFO', async () => {
    const restricted = client(aof.url, {
      username: 'nothing',
      password: PASSWORD,
      enableReadyCheck: false,
    });
    const report = await redisPersistence(restricted);
    expect(report.verdict).toBe('unknown');
    expect(describePersistence(report)).toMatch(
      /^cannot tell whether Redis keeps its data on disk/,
    );

    const logs = captureLogs('info');
    await logRedisPersistence(restricted, logs.logger);
    const entry = await logs.waitFor((e) => e.redis_persistence !== undefined);
    expect(entry).toMatchObject({ level: 30, redis_persistence: 'unknown' });
    expect(logs.lines.join('\n')).not.toContain(PASSWORD);
  });

  it('config check prints a warning for the local Redis and the persistence of one that keeps it', async () => {
    const local = await configCheck(testRedisUrl());
    expect(local.code, local.output).toBe(0);
    expect(local.output).toContain('warning: redis: Redis keeps nothing on disk');
    expect(local.output).toContain('configuration is valid for ingest');

    const kept = await configCheck(aof.url);
    expect(kept.code, kept.output).toBe(0);
    expect(kept.output).toContain('redis: Redis keeps its data on disk: AOF (everysec)');
    expect(kept.output).not.toContain('warning: redis');
  });
});
