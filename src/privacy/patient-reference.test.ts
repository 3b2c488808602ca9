import { describe, expect, it } from 'vitest';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../identity/crosswalk-keys.ts';
import { auditPatientRef } from './patient-reference.ts';

describe('auditPatientRef', () => {
  const keys = deriveCrosswalkKeys(generateCrosswalkSecret());

  it('is stable per local id, differs between ids, and never holds the id', () => {
    const marker = 'MRN-PLANTED-7f3a';
    const ref = auditPatientRef(keys, marker);
    expect(ref).toMatch(/^hmac:[A-Za-z0-9_-]{43}$/);
    expect(auditPatientRef(keys, marker)).toBe(ref);
    expect(auditPatientRef(keys, 'MRN-OTHER')).not.toBe(ref);
    expect(ref).not.toContain(marker);
  });

  it('is not the crosswalk lookup of the id (it names no crosswalk key)', () => {
    expect(auditPatientRef(keys, 'MRN-1')).not.toBe(`hmac:${keys.lookup('MRN-1')}`);
  });

  it('depends on CROSSWALK_KEY', () => {
    const other = deriveCrosswalkKeys(generateCrosswalkSecret());
    expect(auditPatientRef(other, 'MRN-1')).not.toBe(auditPatientRef(keys, 'MRN-1'));
  });
});
