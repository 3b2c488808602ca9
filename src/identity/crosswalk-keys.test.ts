import { describe, expect, it } from 'vitest';
import {
  CrosswalkKeyError,
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
} from './crosswalk-keys.ts';

describe('deriveCrosswalkKeys', () => {
  const keys = deriveCrosswalkKeys(generateCrosswalkSecret());

  it('looks identifiers up by a stable HMAC that does not contain them', () => {
    expect(keys.lookup('MRN-123')).toBe(keys.lookup('MRN-123'));
    expect(keys.lookup('MRN-123')).not.toBe(keys.lookup('MRN-124'));
    expect(keys.lookup('MRN-123')).not.toContain('MRN');
    const other = deriveCrosswalkKeys(generateCrosswalkSecret());
    expect(other.lookup('MRN-123')).not.toBe(keys.lookup('MRN-123'));
  });

  it('seals with a fresh IV each time and opens only with the same context', () => {
    const a = keys.seal('MRN-123', 'patient:1');
    const b = keys.seal('MRN-123', 'patient:1');
    expect(a).not.toBe(b);
    expect(Buffer.from(a, 'base64').toString('latin1')).not.toContain('MRN-123');
    expect(keys.open(a, 'patient:1').toString()).toBe('MRN-123');
    expect(() => keys.open(a, 'patient:2')).toThrow();
  });

  it('detects tampering', () => {
    const sealed = Buffer.from(keys.seal('MRN-123', 'ctx'), 'base64');
    sealed[sealed.length - 1] = (sealed[sealed.length - 1] ?? 0) ^ 1;
    expect(() => keys.open(sealed.toString('base64'), 'ctx')).toThrow();
  });

  it('refuses a tag cut short (GCM would accept a prefix of the right tag)', () => {
    const sealed = Buffer.from(keys.seal('', 'ctx'), 'base64');
    expect(keys.open(sealed.toString('base64'), 'ctx').toString()).toBe('');
    expect(() => keys.open(sealed.subarray(0, 24).toString('base64'), 'ctx')).toThrow();
  });

  it('draws a fresh IV for every seal, across its batches of random IVs', () => {
    const ivs = new Set(
      Array.from({ length: 3_000 }, () =>
        Buffer.from(keys.seal('x', 'ctx'), 'base64').subarray(0, 12).toString('hex'),
      ),
    );
    expect(ivs.size).toBe(3_000);
  });

  it('accepts hex and refuses short or malformed secrets', () => {
    expect(() => deriveCrosswalkKeys('ab'.repeat(32))).not.toThrow();
    expect(() => deriveCrosswalkKeys('c2hvcnQ=')).toThrow(CrosswalkKeyError);
    expect(() => deriveCrosswalkKeys('not base64 at all!')).toThrow(CrosswalkKeyError);
  });
});

/**
 * Made by the code before keys were prepared as key objects (commit 8dc7cee): what rests in Redis
 * today must still open, and the lookup HMACs that name its keys must not change.
 */
const BEFORE = {
  secret: 'CzBVep/E6Q4zWH2ix+wRNluApcrvFDleg6jN8hc8YYY=',
  psid: '4b7e2c1a-0000-4000-8000-000000000001',
  lookup: 'Za5f4kz_TviaopZxJW3KB-s0xDRllLurgd6KTchxgEc',
  sealedLocalId: 'LfZROpYiG+vVF+rJQCmgc/CiIBcu1e+PCuII13F4FpeqFnK2',
  sealedRecord: 'LFJ4VYGgvtboqhPj8dhL9m9uV2UK+mP0jF8MYjCeUw/c4/yQTUcuSbZM+f8F8A==',
};

describe('values sealed before', () => {
  const keys = deriveCrosswalkKeys(BEFORE.secret);

  it('open, and the lookup HMAC is the same', () => {
    expect(keys.lookup('MRN-0042')).toBe(BEFORE.lookup);
    expect(keys.open(BEFORE.sealedLocalId, `xw:${BEFORE.psid}`).toString('utf8')).toBe('MRN-0042');
    expect(
      JSON.parse(keys.open(BEFORE.sealedRecord, `rec:${BEFORE.psid}`).toString('utf8')),
    ).toEqual({ a: 'Zoë', n: 1 });
    expect(() => keys.open(BEFORE.sealedLocalId, `rec:${BEFORE.psid}`)).toThrow();
  });

  it('are laid out as what is sealed now: iv | tag | ciphertext, base64', () => {
    const now = Buffer.from(keys.seal('MRN-0042', `xw:${BEFORE.psid}`), 'base64');
    expect(now.length).toBe(Buffer.from(BEFORE.sealedLocalId, 'base64').length);
    expect(keys.open(now.toString('base64'), `xw:${BEFORE.psid}`).toString()).toBe('MRN-0042');
  });
});
