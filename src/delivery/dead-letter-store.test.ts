import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../identity/crosswalk-keys.ts';
import type { DeadLetter } from './dead-letter.ts';
import { DeadLetterStore } from './dead-letter-store.ts';

let redis: Awaited<ReturnType<typeof isolatedRedis>>;
let now = Date.parse('2026-11-02T08:00:00Z');
let store: DeadLetterStore;
const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
beforeEach(async () => {
  redis = await isolatedRedis();
  store = new DeadLetterStore({
    redis: redis.redis,
    prefix: redis.prefix,
    keys,
    retentionDays: 2,
    now: () => now,
  });
});
afterEach(() => redis.cleanup());

const letter = (createdAt: string, category = 'END002', psid = 'psid'): DeadLetter => ({
  event: {
    id: randomUUID(),
    type: 'concordance.completed',
    created_at: createdAt,
    patient_id: 'MRN-PLANTED-DL',
    patient_service_id: psid,
    ccsr_category: category,
    record_version: 1,
    triggered_by: { event_ids: [], count: 0, first_update_at: null, last_update_at: null },
    remote_job_id: null,
    status: 'completed',
    concordance: {},
    error: null,
  },
  channel: 'webhook',
  last_error: { code: 'ERR_WEBHOOK_STATUS', status: 503, message: 'the endpoint answered 503' },
  attempts: 3,
  first_attempt_at: createdAt,
  last_attempt_at: createdAt,
  dead_lettered_at: createdAt,
});

describe('DeadLetterStore', () => {
  it('lists by event time, filters by time and category, counts and removes', async () => {
    const late = letter('2026-11-02T07:00:00.000Z', 'CIR007');
    const early = letter('2026-11-01T07:00:00.000Z');
    const middle = letter('2026-11-01T12:00:00.000Z');
    for (const l of [late, early, middle]) await store.add(l);
    const ids = (ls: DeadLetter[]) => ls.map((l) => l.event.id);
    expect(ids(await store.list())).toEqual([early, middle, late].map((l) => l.event.id));
    expect(ids(await store.list({ since: new Date(middle.event.created_at) }))).toEqual(
      [middle, late].map((l) => l.event.id),
    );
    expect(ids(await store.list({ category: 'CIR007' }))).toEqual([late.event.id]);
    expect(await store.count()).toBe(3);
    expect(await store.get(early.event.id)).toEqual(early);
    expect(await store.remove(early.event.id)).toBe(true);
    expect(await store.remove(early.event.id)).toBe(false);
    expect(await store.count()).toBe(2);
  });

  it('keeps patient_id sealed at rest, bound to its event; only the crosswalk keys open it', async () => {
    const kept = letter('2026-11-01T07:00:00.000Z');
    await store.add(kept);
    const raw = await redis.redis.hget(`${redis.prefix}:dead-letters:records`, kept.event.id);
    expect(raw).not.toContain('MRN-PLANTED-DL');
    expect(JSON.parse(raw ?? '{}')).toMatchObject({
      event: { patient_id_sealed: expect.any(String), id: kept.event.id },
    });
    expect(await store.get(kept.event.id)).toEqual(kept);
    const otherKeys = new DeadLetterStore({
      redis: redis.redis,
      prefix: redis.prefix,
      keys: deriveCrosswalkKeys(generateCrosswalkSecret()),
      now: () => now,
    });
    await expect(otherKeys.get(kept.event.id)).rejects.toThrow();
    // Moved to another event id, the sealed value no longer opens (bound to its event).
    const moved = JSON.parse(raw ?? '{}') as { event: { id: string } };
    moved.event.id = randomUUID();
    await redis.redis.hset(
      `${redis.prefix}:dead-letters:records`,
      kept.event.id,
      JSON.stringify(moved),
    );
    await expect(store.get(kept.event.id)).rejects.toThrow();
  });

  it('summarises letters newest first, page by page, without the keys and naming no patient', async () => {
    const letters = [
      letter('2026-11-01T07:00:00.000Z', 'END002', 'psid-planted-a'),
      letter('2026-11-01T08:00:00.000Z', 'CIR007', 'psid-planted-b'),
      letter('2026-11-01T09:00:00.000Z', 'END002', 'psid-planted-c'),
    ];
    for (const l of letters) await store.add(l);
    const keyless = new DeadLetterStore({
      redis: redis.redis,
      prefix: redis.prefix,
      retentionDays: 2,
      now: () => now,
    });
    const [first, second, third] = letters as [DeadLetter, DeadLetter, DeadLetter];
    const summaryOf = ({ event, ...rest }: DeadLetter) => ({
      ...rest,
      event: {
        id: event.id,
        type: event.type,
        created_at: event.created_at,
        ccsr_category: event.ccsr_category,
        status: event.status,
      },
    });
    expect(await keyless.summaries(0, 1)).toEqual([summaryOf(third), summaryOf(second)]);
    expect(await keyless.summaries(2, 3)).toEqual([summaryOf(first)]);
    expect(await keyless.summaries(3, 4)).toEqual([]);
    expect(await keyless.summary(second.event.id)).toEqual(summaryOf(second));
    expect(await keyless.summary(randomUUID())).toBeUndefined();
    const shown = JSON.stringify(await keyless.summaries(0, -1));
    expect(shown).not.toMatch(/MRN-PLANTED-DL|psid-planted|patient_id|"concordance"|triggered_by/);
  });

  it('purges one patient’s letters and keeps the others', async () => {
    const mine = [
      letter('2026-11-01T07:00:00.000Z', 'END002', 'psid-a'),
      letter('2026-11-01T08:00:00.000Z', 'CIR007', 'psid-a'),
    ];
    const theirs = letter('2026-11-01T09:00:00.000Z', 'END002', 'psid-b');
    for (const l of [...mine, theirs]) await store.add(l);
    expect(await store.purgePatient('psid-a')).toBe(2);
    expect((await store.list()).map((l) => l.event.id)).toEqual([theirs.event.id]);
    expect(await store.purgePatient('psid-a')).toBe(0);
  });

  it('keeps a letter for the retention period from when it was dead-lettered', async () => {
    const old = letter('2020-01-01T00:00:00.000Z');
    await store.add(old);
    now += 2 * 86_400_000 - 1;
    expect(await store.count()).toBe(1);
    now += 2;
    expect(await store.count()).toBe(0);
    expect(await store.list()).toEqual([]);
    expect(await redis.redis.exists(`${redis.prefix}:dead-letters:by-time`)).toBe(0);
  });
});
