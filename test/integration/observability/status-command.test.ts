import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
} from '../../../src/identity/crosswalk-keys.ts';
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeadLetterStore } from '../../../src/delivery/dead-letter-store.ts';
import type { DeadLetter } from '../../../src/delivery/dead-letter.ts';
import { AuthPause } from '../../../src/queues/auth-pause.ts';
import type { PipelineStatus } from '../../../src/runtime/pipeline-status.ts';
import { freePort } from '../../../tools/local-redis.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { UnmappedProblems } from '../../../src/terminology/unmapped-problems.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';

const HOUR_MS = 3_600_000;

function letter(category: string): DeadLetter {
  const at = new Date().toISOString();
  return {
    event: {
      id: randomUUID(),
      type: 'concordance.completed',
      created_at: at,
      patient_id: 'MRN-STATUS',
      patient_service_id: 'svc-status',
      ccsr_category: category,
      record_version: 1,
      triggered_by: { event_ids: ['e-1'], count: 1, first_update_at: at, last_update_at: at },
      remote_job_id: 'remote-1',
      status: 'completed',
      concordance: {},
      error: null,
    },
    channel: 'webhook',
    last_error: { code: 'ERR_WEBHOOK_GONE', status: 410, message: 'gone' },
    attempts: 1,
    first_attempt_at: at,
    last_attempt_at: at,
    dead_lettered_at: at,
  };
}

async function run(args: string[], env: Record<string, string>) {
  const cli = new CliProcess(args, env);
  const code = await cli.exited;
  return { code, stdout: cli.stdout.join('\n'), lines: cli.lines };
}

/**
 * `concordance-worker status` against a known state in Redis: a queue paused because the service
 * refused the key (with an old waiting job and delayed jobs), a rate-limited queue, an
 * operator-paused webhook queue, and dead letters.
 */
describe('concordance-worker status', () => {
  let redis: Awaited<ReturnType<typeof isolatedRedis>>;
  let env: Record<string, string>;
  const queues: Queue[] = [];

  beforeAll(async () => {
    redis = await isolatedRedis();
    env = { REDIS_URL: testRedisUrl(), REDIS_PREFIX: redis.prefix };
    const queue = (name: string) => {
      const q = new Queue(name, { connection: redis.redis, prefix: redis.prefix });
      queues.push(q);
      return q;
    };

    const queries = queue('concordance-queries');
    await queries.add('query', {}, { timestamp: Date.now() - 2 * HOUR_MS });
    await queries.add('query', {});
    await queries.add('query', {}, { delay: HOUR_MS });
    await queries.add('query', {}, { delay: HOUR_MS });
    await new AuthPause(queries, redis.redis, redis.prefix).pause('ERR_SERVICE_AUTH');

    const results = queue('concordance-results');
    for (let i = 0; i < 3; i++) await results.add('concordance.completed', {});
    await results.rateLimit(HOUR_MS);

    const webhook = queue('webhook-deliveries');
    await webhook.add('delivery', {}, { delay: HOUR_MS });
    await webhook.pause();

    const letters = new DeadLetterStore({
      redis: redis.redis,
      prefix: redis.prefix,
      keys: deriveCrosswalkKeys(generateCrosswalkSecret()),
    });
    await letters.add(letter('END002'));
    await letters.add(letter('CIR007'));

    // Unmapped problem codes, as the terminology step records them (src/terminology/).
    const unmapped = new UnmappedProblems({ redis: redis.redis, prefix: redis.prefix });
    for (let n = 0; n < 3; n++) await unmapped.record([{ system: 'SCT', code: '195662009' }]);
    await unmapped.record([{ system: 'I9', code: '596.5' }]);
  });

  afterAll(async () => {
    for (const q of queues) await q.close();
    await redis.cleanup();
  });

  it('prints one JSON document with --json', async () => {
    const { code, stdout } = await run(['status', '--json'], env);
    expect(code).toBe(0);
    const status = JSON.parse(stdout) as PipelineStatus;
    expect(status.prefix).toBe(redis.prefix);
    expect(status.dead_letters).toEqual({ count: 2 });
    expect(status.unmapped_problems).toEqual([
      { system: 'http://snomed.info/sct', code: '195662009', count: 3 },
      { system: 'http://hl7.org/fhir/sid/icd-9-cm', code: '596.5', count: 1 },
    ]);
    const byName = Object.fromEntries(status.queues.map((q) => [q.name, q]));
    expect(Object.keys(byName)).toEqual([
      'concordance-queries',
      'concordance-results',
      'webhook-deliveries',
    ]);

    expect(byName['concordance-queries']).toMatchObject({
      counts: { waiting: 2, delayed: 2, active: 0, completed: 0, failed: 0 },
      paused: true,
      auth_paused: true,
      rate_limited_ms: null,
    });
    expect(byName['concordance-queries']?.oldest_waiting_age_ms).toBeGreaterThanOrEqual(
      2 * HOUR_MS,
    );

    expect(byName['concordance-results']).toMatchObject({
      counts: { waiting: 3, delayed: 0 },
      paused: false,
      auth_paused: false,
    });
    const held = byName['concordance-results']?.rate_limited_ms;
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(HOUR_MS);

    expect(byName['webhook-deliveries']).toMatchObject({
      counts: { waiting: 0, delayed: 1 },
      paused: true,
      auth_paused: false,
      rate_limited_ms: null,
      oldest_waiting_age_ms: null,
    });
  });

  it('prints a readable table by default', async () => {
    const { code, stdout } = await run(['status'], env);
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    expect(lines[0]?.split(/\s{2,}/)).toEqual([
      'queue',
      'waiting',
      'delayed',
      'active',
      'completed',
      'failed',
      'paused',
      'rate limited',
      'oldest waiting',
    ]);
    const row = (name: string) =>
      lines.find((l) => l.startsWith(`${name} `))?.split(/\s{2,}/) ?? [];
    expect(row('concordance-queries')).toEqual([
      'concordance-queries',
      '2',
      '2',
      '0',
      '0',
      '0',
      'yes (API key refused)',
      'no',
      expect.stringMatching(/^2 h \d+ min$/),
    ]);
    expect(row('concordance-results')).toEqual([
      'concordance-results',
      '3',
      '0',
      '0',
      '0',
      '0',
      'no',
      expect.stringMatching(/^for (\d+ min \d+ s|1 h 0 min)$/),
      expect.stringMatching(/^\d+\.\d s$/),
    ]);
    expect(row('webhook-deliveries')).toEqual([
      'webhook-deliveries',
      '0',
      '1',
      '0',
      '0',
      '0',
      'yes',
      'no',
      '-',
    ]);
    expect(lines).toContain('dead letters: 2');
    const unmappedAt = lines.findIndex((l) => l.startsWith('unmapped problem codes'));
    expect(unmappedAt).toBeGreaterThan(0);
    expect(lines[unmappedAt + 1]?.split(/\s{2,}/)).toEqual(['system', 'code', 'reports']);
    expect(lines.slice(unmappedAt + 2).map((l) => l.split(/\s{2,}/))).toEqual(
      expect.arrayContaining([
        ['http://snomed.info/sct', '195662009', '3'],
        ['http://hl7.org/fhir/sid/icd-9-cm', '596.5', '1'],
      ]),
    );
  });

  it('ends with one line naming Redis (without its password) when Redis is unreachable', async () => {
    const port = await freePort();
    const { code, lines, stdout } = await run(['status'], {
      REDIS_URL: `redis://user:status-secret@127.0.0.1:${port}`,
    });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(lines).toEqual([
      `concordance-worker: Redis at redis://127.0.0.1:${port} is unreachable`,
    ]);
  });
});
