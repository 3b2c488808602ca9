import { createHash, randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { ChangeDetector } from './change-detector.ts';
import type { ResultEvent } from '../interface/result-event.ts';

let redis: Awaited<ReturnType<typeof isolatedRedis>>;
let detector: ChangeDetector;
beforeEach(async () => {
  redis = await isolatedRedis();
  detector = new ChangeDetector({
    redis: redis.redis,
    prefix: redis.prefix,
    ignoreFields: ['generated_at'],
  });
});
afterEach(() => redis.cleanup());

const event = (overrides: Partial<ResultEvent> = {}): ResultEvent => ({
  id: randomUUID(),
  type: 'concordance.completed',
  created_at: new Date().toISOString(),
  patient_id: 'p',
  patient_service_id: 'psid',
  ccsr_category: 'END002',
  record_version: 1,
  triggered_by: { event_ids: [], count: 0, first_update_at: null, last_update_at: null },
  remote_job_id: null,
  status: 'completed',
  concordance: { concordant: true, generated_at: 'a' },
  error: null,
  ...overrides,
});

describe('ChangeDetector', () => {
  it('calls the first result of a key changed, then compares with the previous one', async () => {
    expect(await detector.check(event())).toBe(true);
    expect(
      await detector.check(event({ concordance: { generated_at: 'b', concordant: true } })),
    ).toBe(false);
    expect(await detector.check(event({ concordance: { concordant: false } }))).toBe(true);
    expect(await detector.check(event({ ccsr_category: 'CIR007' }))).toBe(true);
  });

  it('gives the same answer when the same event is checked again', async () => {
    const first = event();
    expect(await detector.check(first)).toBe(true);
    expect(await detector.check(first)).toBe(true);
    const same = event();
    expect(await detector.check(same)).toBe(false);
    expect(await detector.check(same)).toBe(false);
  });

  it('checks a batch in one step, in order, as one check after another would', async () => {
    const [a1, b1] = [event(), event({ ccsr_category: 'CIR007' })];
    const a2 = event({ concordance: { concordant: true, generated_at: 'later' } }); // the same
    const a3 = event({ concordance: { concordant: false } });
    expect(await detector.checkMany([a1, b1, a2, a3, a2])).toEqual([true, true, false, true, true]);
    expect(await detector.checkMany([])).toEqual([]);
    // The same answers event by event, on a detector of its own prefix.
    const other = await isolatedRedis();
    const single = new ChangeDetector({
      redis: other.redis,
      prefix: other.prefix,
      ignoreFields: ['generated_at'],
    });
    const one = [];
    for (const e of [a1, b1, a2, a3, a2]) one.push(await single.check(e));
    await other.cleanup();
    expect(one).toEqual([true, true, false, true, true]);
  });

  it('never ignores the outcome, even when ignore_fields names it', async () => {
    const ignoring = new ChangeDetector({
      redis: redis.redis,
      prefix: redis.prefix,
      ignoreFields: ['status', 'error'],
    });
    expect(ignoring.contentHash(event())).not.toBe(
      ignoring.contentHash(event({ status: 'failed', type: 'concordance.failed' })),
    );
    const failure = (code: string) =>
      event({ status: 'failed', concordance: null, error: { code, message: code } });
    expect(ignoring.contentHash(failure('A'))).not.toBe(ignoring.contentHash(failure('B')));
  });

  it('compares Prevent recommendations under their own key, ignore_fields applying inside', async () => {
    const prevent = (recommendations: object) =>
      event({
        type: 'prevent.completed',
        ccsr_category: 'prevent',
        concordance: null,
        prevent: { generated_at: randomUUID(), recommendations },
      });
    expect(await detector.check(event())).toBe(true);
    expect(await detector.check(prevent([{ rank: 1, factor: 'smoking' }]))).toBe(true);
    expect(await detector.check(prevent([{ rank: 1, factor: 'smoking' }]))).toBe(false);
    expect(await detector.check(prevent([{ rank: 1, factor: 'weight' }]))).toBe(true);
    // The concordance key was not disturbed, and its fingerprint is what it was before Prevent.
    expect(await detector.check(event())).toBe(false);
    const before = JSON.stringify(['completed', null, '{"concordant":true}']);
    expect(detector.contentHash(event())).toBe(createHash('sha256').update(before).digest('hex'));
  });
});
