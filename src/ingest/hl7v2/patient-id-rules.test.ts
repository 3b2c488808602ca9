import { describe, expect, it } from 'vitest';
import { ConfigSchema, type PatientIdConfig } from '../../config/config-schema.ts';
import { loadConfig } from '../../config/load-config.ts';
import { parseEr7, segmentsNamed, type Er7Message } from './er7.ts';
import { describeRules, patientKeyOfPid, priorKeyOfMrg } from './patient-id-rules.ts';

const DEFAULT = loadConfig({ env: { INGEST_TOKENS: 'rules-test-token-0123456789' } }).hl7v2
  .patient_id;

function message(pid: string, mrg = ''): Er7Message {
  return parseEr7(
    [
      'MSH|^~\\&|EHR|HOSP|CW|HOSP|20260101120000||ADT^A08|C1|P|2.3',
      pid,
      ...(mrg === '' ? [] : [mrg]),
    ].join('\r'),
  );
}

function keyOf(pid: string, config: PatientIdConfig = DEFAULT): string | undefined {
  const m = message(pid);
  const segment = segmentsNamed(m, 'PID')[0];
  if (segment === undefined) throw new Error('no PID');
  return patientKeyOfPid(segment, m.delimiters, config);
}

const STRICT: PatientIdConfig = {
  rules: [{ type_codes: ['MR'], authorities: ['HOSP'] }],
  fallback_fields: [],
  unqualified_authorities: [],
};

describe('patient id rules (default)', () => {
  it('prefers MR over an earlier PI, whatever the order of repetitions', () => {
    expect(keyOf('PID|1||777^^^HOSP^PI~123^^^HOSP^MR||Doe^Jane')).toBe('HOSP|123');
  });

  it('takes PI, PT and the like when there is no MR', () => {
    expect(keyOf('PID|1||SS1^^^SSA^SS~14^^^LAB^PI||Doe^Jane')).toBe('LAB|14');
    expect(keyOf('PID|1||55^^^^PT||Doe^Jane')).toBe('55');
  });

  it('accepts a bare id (v2.2/v2.3 feeds), keyed by the id alone', () => {
    expect(keyOf('PID|1||10292||Doe^Jane')).toBe('10292');
    expect(keyOf('PID|1||""~10292||Doe^Jane')).toBe('10292');
  });

  it('falls back to PID-2, then PID-4, when PID-3 is empty', () => {
    expect(keyOf('PID|1|0042^^^OLD||||Doe^Jane')).toBe('OLD|0042');
    expect(keyOf('PID|1|||ALT9|Doe^Jane')).toBe('ALT9');
    expect(keyOf('PID|1||||')).toBeUndefined();
  });

  it('keeps equal numbers from two authorities apart (namespace, else universal id)', () => {
    const a = keyOf('PID|1||12345^^^NORTH^MR||Doe^Jane');
    const b = keyOf('PID|1||12345^^^SOUTH^MR||Doe^Jane');
    const oid = keyOf('PID|1||12345^^^&2.16.840.1.113883.3.1&ISO^MR||Doe^Jane');
    expect(new Set([a, b, oid]).size).toBe(3);
    expect(oid).toBe('2.16.840.1.113883.3.1|12345');
  });

  it('keys an unqualified (home) authority, or every one with *, by the id alone', () => {
    const home = { ...DEFAULT, unqualified_authorities: ['HOSP'] };
    expect(keyOf('PID|1||123^^^HOSP^MR', home)).toBe('123');
    expect(keyOf('PID|1||123^^^OTHER^MR', home)).toBe('OTHER|123');
    expect(keyOf('PID|1||123^^^OTHER^MR', { ...DEFAULT, unqualified_authorities: ['*'] })).toBe(
      '123',
    );
  });

  it('keeps an escaped | inside an authority escaped', () => {
    expect(keyOf('PID|1||9^^^A\\F\\B^MR')).toBe('A\\F\\B|9');
  });
});

describe('patient id rules (strict site)', () => {
  it('accepts only its own MR and nothing else', () => {
    expect(keyOf('PID|1||123^^^HOSP^MR', STRICT)).toBe('HOSP|123');
    expect(keyOf('PID|1||123^^^HOSP^PI', STRICT)).toBeUndefined();
    expect(keyOf('PID|1||123^^^OTHER^MR', STRICT)).toBeUndefined();
    expect(keyOf('PID|1||123', STRICT)).toBeUndefined();
    expect(keyOf('PID|1|123^^^HOSP^MR||', STRICT)).toBeUndefined();
  });

  it('an authority rule alone matches the universal id too', () => {
    const byAuthority: PatientIdConfig = {
      rules: [{ authorities: ['2.16.1'] }],
      fallback_fields: [],
      unqualified_authorities: [],
    };
    expect(keyOf('PID|1||9^^^X^PI~8^^^test1&2.16.1&HCD^MR', byAuthority)).toBe('test1|8');
  });

  it('describes its rules for the AE text', () => {
    expect(describeRules(DEFAULT)).toBe(
      'type MR, then type MRN/PI/PT/PN/PE/AN, then any non-empty id',
    );
    expect(describeRules(STRICT)).toBe('type MR from authority HOSP');
  });
});

describe('MRG (the retired id of a merge)', () => {
  it('reads MRG-1 with the same rules and key form, MRG-4 as the old-version fallback', () => {
    const m = message('PID|1||123^^^HOSP^MR', 'MRG|456^^^HOSP^MR');
    const mrg = segmentsNamed(m, 'MRG')[0];
    expect(mrg && priorKeyOfMrg(mrg, m.delimiters, DEFAULT)).toBe('HOSP|456');
    const old = message('PID|1||123', 'MRG||||456');
    const oldMrg = segmentsNamed(old, 'MRG')[0];
    expect(oldMrg && priorKeyOfMrg(oldMrg, old.delimiters, DEFAULT)).toBe('456');
    expect(oldMrg && priorKeyOfMrg(oldMrg, old.delimiters, STRICT)).toBeUndefined();
  });
});

describe('hl7v2.patient_id config', () => {
  const base = loadConfig({ env: { INGEST_TOKENS: 'rules-test-token-0123456789' } });
  const parse = (patientId: unknown) =>
    ConfigSchema.safeParse({ ...base, hl7v2: { ...base.hl7v2, patient_id: patientId } });

  it('still reads the old form, keyed by the id alone as before', () => {
    const parsed = parse({ type_code: 'MR', assigning_authority: 'HOSP' });
    expect(parsed.success && parsed.data.hl7v2.patient_id).toEqual({
      rules: [{ type_codes: ['MR'], authorities: ['HOSP'] }],
      fallback_fields: [],
      unqualified_authorities: ['*'],
    });
    const any = parse({ type_code: 'MR', assigning_authority: null });
    expect(any.success && any.data.hl7v2.patient_id.rules).toEqual([{ type_codes: ['MR'] }]);
  });

  it('refuses a mix of the two forms, and a rule that is both any and typed, with a clear message', () => {
    const mixed = parse({ ...DEFAULT, type_code: 'MR' });
    expect(mixed.success).toBe(false);
    expect(JSON.stringify(mixed.error?.issues)).toContain('not a mix');
    const both = parse({ ...DEFAULT, rules: [{ any: true, type_codes: ['MR'] }] });
    expect(both.success).toBe(false);
    const empty = parse({ ...DEFAULT, rules: [] });
    expect(empty.success).toBe(false);
  });
});

describe('identity.patient_key.hospital_mrn (one key across feeds)', () => {
  const withMrn = (authorities: string) =>
    loadConfig({
      env: {
        INGEST_TOKENS: 'rules-test-token-0123456789',
        MRN_HL7V2_AUTHORITIES: authorities,
      },
    }).hl7v2.patient_id;

  it('keys an id of an MRN authority (namespace or universal id) by the id alone', () => {
    const config = withMrn('GOODHEALTH,2.16.840.1.113883.19.5');
    expect(keyOf('PID|1||PATID^^^GOODHEALTH^MR', config)).toBe('PATID');
    expect(keyOf('PID|1||PATID^^^&2.16.840.1.113883.19.5&ISO^MR', config)).toBe('PATID');
    // Another authority stays qualified; the MRG of a merge is keyed the same way.
    expect(keyOf('PID|1||PATID^^^OTHER^MR', config)).toBe('OTHER|PATID');
    const m = message('PID|1||1^^^GOODHEALTH^MR', 'MRG|456^^^GOODHEALTH^MR');
    const mrg = segmentsNamed(m, 'MRG')[0];
    expect(mrg && priorKeyOfMrg(mrg, m.delimiters, config)).toBe('456');
  });

  it('without it, as before: the id keeps its authority', () => {
    expect(keyOf('PID|1||PATID^^^GOODHEALTH^MR')).toBe('GOODHEALTH|PATID');
    expect(DEFAULT.unqualified_authorities).toEqual([]);
  });
});
