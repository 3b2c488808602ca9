import { describe, expect, it } from 'vitest';
import { OutboundKeyError } from './outbound-key-error.ts';
import { openOutbound, outboundAesKey, sealOutbound } from './outbound-seal.ts';

/** Sealed by the code before the AES key was prepared as a key object (commit 8dc7cee). */
const BEFORE = {
  key: 'BzxxptsQRXqv5BlOg7jtIleMwfYrYJXK/zRpntMIPXI=',
  sealed: '6s6_JzdQFzz1cY7ifYb71sfCtsVWv2Td1iGte8wXbz9fSsq8',
};

describe('outbound sealing', () => {
  const key = outboundAesKey(BEFORE.key);

  it('opens what the earlier code sealed, with the same key text and associated data only', () => {
    expect(openOutbound(key, BEFORE.sealed, 'evt-1')).toBe('MRN-0042');
    expect(openOutbound(outboundAesKey(BEFORE.key), BEFORE.sealed, 'evt-1')).toBe('MRN-0042');
    expect(() => openOutbound(key, BEFORE.sealed, 'evt-2')).toThrow();
    expect(() => openOutbound(outboundAesKey('ab'.repeat(32)), BEFORE.sealed, 'evt-1')).toThrow();
  });

  it('seals base64url(iv | tag | ciphertext) with a fresh IV, as before', () => {
    const a = sealOutbound(key, 'MRN-0042', 'evt-1');
    const b = sealOutbound(key, 'MRN-0042', 'evt-1');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(a.length).toBe(BEFORE.sealed.length);
    expect(openOutbound(key, a, 'evt-1')).toBe('MRN-0042');
  });

  it('refuses a value too short to hold an IV and a tag', () => {
    const short = Buffer.alloc(27).toString('base64url');
    expect(() => openOutbound(key, short, 'evt-1')).toThrow(OutboundKeyError);
  });
});
