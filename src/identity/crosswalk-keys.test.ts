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

  it('accepts hex and refuses short or malformed secrets', () => {
    expect(() => deriveCrosswalkKeys('ab'.repeat(32))).not.toThrow();
    expect(() => deriveCrosswalkKeys('c2hvcnQ=')).toThrow(CrosswalkKeyError);
    expect(() => deriveCrosswalkKeys('not base64 at all!')).toThrow(CrosswalkKeyError);
  });
});
