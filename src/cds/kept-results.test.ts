import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../identity/crosswalk-keys.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import { keptResultsKey } from './kept-result.ts';
import { KeptResults } from './kept-results.ts';

let env: Awaited<ReturnType<typeof isolatedRedis>>;
let now = Date.parse('2026-11-02T08:00:00Z');
const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
let kept: KeptResults;
beforeEach(async () => {
  env = await isolatedRedis();
  kept = new KeptResults({
    redis: env.redis,
    prefix: env.prefix,
    keys,
    retentionDays: 2,
    optOutKeyOf: (prefix, psid) => `${prefix}:optout:${psid}`,
    now: () => now,
  });
});
afterEach(() => env.cleanup());

const event = (over: Partial<ResultEvent> = {}): ResultEvent => ({
  id: randomUUID(),
  type: 'concordance.completed',
  created_at: '2026-11-02T08:00:00.000Z',
  patient_id: 'MRN-PLANTED-KEEPER',
  patient_service_id: 'psid-a',
  ccsr_category: 'END002',
  record_version: 3,
  triggered_by: { event_ids: [], count: 1, first_update_at: null, last_update_at: null },
  remote_job_id: 'job-1',
  status: 'completed',
  concordance: { summary: 'marker-v3' },
  error: null,
  ...over,
});

describe('KeptResults', () => {
  it('keeps the latest completed result per category, sealed, without the local id', async () => {
    await kept.keep([event(), event({ ccsr_category: 'CIR007', concordance: { summary: 'c' } })]);
    const read = await kept.read('psid-a');
    expect(read.map((r) => r.ccsr_category)).toEqual(['CIR007', 'END002']);
    expect(read[1]?.concordance).toEqual({ summary: 'marker-v3' });
    const raw = JSON.stringify(await env.redis.hgetall(keptResultsKey(env.prefix, 'psid-a')));
    expect(raw).not.toContain('marker-v3');
    expect(raw).not.toContain('MRN-PLANTED-KEEPER');
  });

  it('never lets an older retry replace a newer result (record version, then created_at)', async () => {
    await kept.keep([event({ record_version: 5, concordance: { summary: 'v5' } })]);
    await kept.keep([event({ record_version: 4, concordance: { summary: 'v4' } })]);
    expect((await kept.read('psid-a'))[0]?.concordance).toEqual({ summary: 'v5' });
    await kept.keep([
      event({
        record_version: 5,
        created_at: '2026-11-02T07:00:00.000Z',
        concordance: { summary: 'old' },
      }),
    ]);
    expect((await kept.read('psid-a'))[0]?.concordance).toEqual({ summary: 'v5' });
    await kept.keep([event({ record_version: 6, concordance: { summary: 'v6' } })]);
    expect((await kept.read('psid-a'))[0]?.concordance).toEqual({ summary: 'v6' });
  });

  it('keeps no failed result, and expires a result after the retention', async () => {
    await kept.keep([event({ type: 'concordance.failed', status: 'failed', concordance: null })]);
    expect(await kept.read('psid-a')).toEqual([]);
    await kept.keep([event()]);
    const ttl = await env.redis.pttl(keptResultsKey(env.prefix, 'psid-a'));
    expect(ttl).toBeGreaterThan(86_400_000);
    expect(ttl).toBeLessThanOrEqual(2 * 86_400_000);
    now += 2 * 86_400_000 + 1;
    expect(await kept.read('psid-a')).toEqual([]);
  });

  it('reads nothing for an opted-out patient, and never another patient’s sealed value', async () => {
    await kept.keep([
      event(),
      event({ patient_service_id: 'psid-b', concordance: { summary: 'b' } }),
    ]);
    // Another patient's sealed value moved under this patient's key does not open.
    const keyA = keptResultsKey(env.prefix, 'psid-a');
    const keyB = keptResultsKey(env.prefix, 'psid-b');
    await env.redis.hset(keyA, 'END002', (await env.redis.hget(keyB, 'END002')) as string);
    expect(await kept.read('psid-a')).toEqual([]);
    await env.redis.set(`${env.prefix}:optout:psid-b`, '1');
    expect(await kept.read('psid-b')).toEqual([]);
  });

  it('erases a patient’s kept results and counts the categories', async () => {
    await kept.keep([event(), event({ ccsr_category: 'CIR007' })]);
    expect(await kept.erase('psid-a')).toBe(2);
    expect(await kept.erase('psid-a')).toBe(0);
    expect(await env.redis.exists(keptResultsKey(env.prefix, 'psid-a'))).toBe(0);
  });
});
