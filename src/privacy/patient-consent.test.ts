import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { PatientConsent } from './patient-consent.ts';

let env: Awaited<ReturnType<typeof isolatedRedis>>;
let consent: PatientConsent;
beforeEach(async () => {
  env = await isolatedRedis();
  consent = new PatientConsent({ redis: env.redis, prefix: env.prefix });
});
afterEach(() => env.cleanup());

const PSID = '0b7d4e2a-9c51-4a8e-b2f3-6d1e0c9a8b7f';

describe('PatientConsent', () => {
  it('stores the opt-out as the plain string key ${prefix}:optout:${psid} holding its time', async () => {
    expect(await consent.isOptedOut(PSID)).toBe(false);
    const at = new Date('2026-11-20T08:00:00.000Z');
    expect(await consent.optOut(PSID, at)).toEqual({
      optedOutAt: '2026-11-20T08:00:00.000Z',
      created: true,
    });
    const key = `${env.prefix}:optout:${PSID}`;
    expect(await env.redis.type(key)).toBe('string');
    expect(await env.redis.get(key)).toBe('2026-11-20T08:00:00.000Z');
    expect(await consent.isOptedOut(PSID)).toBe(true);
    expect(await consent.isOptedOut('another-patient')).toBe(false);
  });

  it('keeps the first opt-out time when repeated', async () => {
    await consent.optOut(PSID, new Date('2026-11-20T08:00:00.000Z'));
    expect(await consent.optOut(PSID, new Date('2026-11-21T08:00:00.000Z'))).toEqual({
      optedOutAt: '2026-11-20T08:00:00.000Z',
      created: false,
    });
    expect(await consent.optedOutAt(PSID)).toBe('2026-11-20T08:00:00.000Z');
  });

  it('opts in: the key is gone; opting in again says nothing was in force', async () => {
    await consent.optOut(PSID);
    expect(await consent.optIn(PSID)).toBe(true);
    expect(await env.redis.exists(`${env.prefix}:optout:${PSID}`)).toBe(0);
    expect(await consent.isOptedOut(PSID)).toBe(false);
    expect(await consent.optIn(PSID)).toBe(false);
  });
});
