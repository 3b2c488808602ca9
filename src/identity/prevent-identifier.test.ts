import { createHmac, hkdfSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PreventIdKeyError, preventIdentifier } from './prevent-identifier.ts';

const KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256));
const SECRET = KEY.toString('base64');

describe('preventIdentifier', () => {
  it('is HMAC-SHA256 under the HKDF-derived key, as 64 hex digits, stable per local id', () => {
    const identify = preventIdentifier(SECRET);
    const derived = Buffer.from(
      hkdfSync(
        'sha256',
        KEY,
        Buffer.alloc(0),
        'concordance-worker prevent unique_patient_identifier v1',
        32,
      ),
    );
    const expected = createHmac('sha256', derived).update('MRN-0042', 'utf8').digest('hex');
    expect(identify('MRN-0042')).toBe(expected);
    expect(identify('MRN-0042')).toMatch(/^[0-9a-f]{64}$/);
    expect(preventIdentifier(KEY.toString('hex'))('MRN-0042')).toBe(expected);
    expect(identify('MRN-0043')).not.toBe(expected);
    expect(identify('MRN-0042')).not.toContain('0042');
  });

  it('differs under another key, so a key of its own is what makes it the same everywhere', () => {
    const other = Buffer.alloc(32, 7).toString('base64');
    expect(preventIdentifier(other)('MRN-0042')).not.toBe(preventIdentifier(SECRET)('MRN-0042'));
  });

  it('refuses a key that is not base64/hex or is shorter than 32 bytes', () => {
    expect(() => preventIdentifier('not a key!')).toThrow(PreventIdKeyError);
    expect(() => preventIdentifier(Buffer.alloc(16, 3).toString('base64'))).toThrow(
      /at least 32 bytes/,
    );
  });
});
