import { describe, expect, it } from 'vitest';
import { QueueViewSessions } from './queue-view-session.ts';

const ONE = 'queue-view-one-0123456789';
const TWO = 'queue-view-two-0123456789';

describe('QueueViewSessions', () => {
  it('opens a session for each token and holds it until it expires', () => {
    let now = Date.parse('2026-11-02T08:00:00Z');
    const sessions = new QueueViewSessions({ tokens: [ONE, TWO], ttlS: 60, now: () => now });
    const first = sessions.open(ONE);
    const second = sessions.open(TWO);
    expect(first).toMatch(/^v1\.\d+\.[A-Za-z0-9_-]{43}$/);
    expect(first).not.toContain(ONE);
    expect(second).not.toBe(first);
    expect(sessions.holds(first)).toBe(true);
    expect(sessions.holds(second)).toBe(true);
    now += 59_999;
    expect(sessions.holds(first)).toBe(true);
    now += 1;
    expect(sessions.holds(first)).toBe(false);
  });

  it('opens nothing for another token and holds nothing it did not sign', () => {
    const sessions = new QueueViewSessions({ tokens: [ONE], ttlS: 60 });
    expect(sessions.open('ingest-token-0123456789')).toBeUndefined();
    expect(sessions.accepts(ONE)).toBe(true);
    expect(sessions.accepts(`${ONE}x`)).toBe(false);
    const value = sessions.open(ONE) ?? '';
    const [version, expiry, mac] = value.split('.') as [string, string, string];
    // A later expiry under the same signature, a changed signature, other forms: none hold.
    expect(sessions.holds(`${version}.${Number(expiry) + 3_600}.${mac}`)).toBe(false);
    const flip = (c: string) => (c === 'A' ? 'B' : 'A');
    expect(sessions.holds(`${version}.${expiry}.${flip(mac[0] ?? '')}${mac.slice(1)}`)).toBe(false);
    // A decoder drops the last character's low bits: a variant there must fail all the same.
    const last = String.fromCharCode((mac.at(-1) ?? 'A').charCodeAt(0) ^ 1);
    expect(sessions.holds(`${version}.${expiry}.${mac.slice(0, -1)}${last}`)).toBe(false);
    expect(sessions.holds(`v2.${expiry}.${mac}`)).toBe(false);
    expect(sessions.holds(ONE)).toBe(false);
    expect(sessions.holds('')).toBe(false);
    expect(sessions.holds(undefined)).toBe(false);
  });

  it('ends the sessions of a token taken out of the list', () => {
    const before = new QueueViewSessions({ tokens: [ONE, TWO], ttlS: 60 });
    const ofOne = before.open(ONE);
    const ofTwo = before.open(TWO);
    const after = new QueueViewSessions({ tokens: [TWO], ttlS: 60 });
    expect(after.holds(ofOne)).toBe(false);
    expect(after.holds(ofTwo)).toBe(true);
    expect(new QueueViewSessions({ tokens: [], ttlS: 60 }).holds(ofTwo)).toBe(false);
  });
});
