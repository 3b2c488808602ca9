import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.ts';
import { ConfigSchema } from './config-schema.ts';
import { loadConfig } from './load-config.ts';
import { fhirPatientKeySystems, patientKeyProblems, withHospitalMrn } from './patient-key.ts';

function fromYaml(yaml: string, env: Record<string, string> = {}) {
  const file = join(mkdtempSync(join(tmpdir(), 'cw-patient-key-')), 'override.yaml');
  writeFileSync(file, yaml);
  return loadConfig({ file, env });
}

function problemsOf(load: () => unknown): string[] {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('identity.patient_key', () => {
  it('maps nothing by default: HL7 keys and FHIR logical ids as before', () => {
    const config = loadConfig({ env: {} });
    expect(config.identity.patient_key).toEqual({
      hospital_mrn: { hl7v2_authorities: [], fhir_identifier_systems: [] },
    });
    expect(config.hl7v2.patient_id.unqualified_authorities).toEqual([]);
    expect(fhirPatientKeySystems(config)).toEqual([]);
    // Also when the section is absent altogether (a configuration parsed without the defaults).
    const { identity: _, ...rest } = config;
    const parsed = ConfigSchema.parse(rest);
    expect(parsed.identity.patient_key.hospital_mrn.hl7v2_authorities).toEqual([]);
  });

  it('adds the MRN authorities to hl7v2.patient_id.unqualified_authorities, once each', () => {
    const config = fromYaml(
      [
        'hl7v2:',
        '  patient_id:',
        '    rules: [{any: true}]',
        '    fallback_fields: []',
        '    unqualified_authorities: [LEGACY, GOODHEALTH]',
        'identity:',
        '  patient_key:',
        '    hospital_mrn: {hl7v2_authorities: [GOODHEALTH, 1.2.3]}',
      ].join('\n'),
    );
    expect(config.hl7v2.patient_id.unqualified_authorities).toEqual([
      'LEGACY',
      'GOODHEALTH',
      '1.2.3',
    ]);
    expect(withHospitalMrn(config)).toBe(config);
  });

  it('tries fhir.patient_identifier_system first, then the MRN systems in order', () => {
    const config = fromYaml(
      [
        'fhir: {patient_identifier_system: "urn:old"}',
        'identity:',
        '  patient_key:',
        '    hospital_mrn: {fhir_identifier_systems: ["urn:old", "urn:a", "urn:b"]}',
      ].join('\n'),
    );
    expect(fhirPatientKeySystems(config)).toEqual(['urn:old', 'urn:a', 'urn:b']);
    const fromEnv = loadConfig({ env: { MRN_FHIR_SYSTEMS: 'urn:a, urn:b' } });
    expect(fhirPatientKeySystems(fromEnv)).toEqual(['urn:a', 'urn:b']);
  });

  it('refuses contradictions, naming the setting', () => {
    // fhir.patient_identifier_system listed after another system: two orders at once.
    expect(
      problemsOf(() =>
        fromYaml(
          [
            'fhir: {patient_identifier_system: "urn:old"}',
            'identity: {patient_key: {hospital_mrn: {fhir_identifier_systems: ["urn:a", "urn:old"]}}}',
          ].join('\n'),
        ),
      ),
    ).toEqual([
      expect.stringMatching(
        /^identity\.patient_key\.hospital_mrn\.fhir_identifier_systems\.1: fhir\.patient_identifier_system is always tried first/,
      ),
    ]);
    // An authority no rule accepts: the setting would do nothing.
    expect(
      problemsOf(() =>
        fromYaml(
          [
            'hl7v2: {patient_id: {rules: [{type_codes: [MR], authorities: [HOSP]}], fallback_fields: [], unqualified_authorities: []}}',
            'identity: {patient_key: {hospital_mrn: {hl7v2_authorities: [HOSP, GOODHEALTH]}}}',
          ].join('\n'),
        ),
      ),
    ).toEqual([
      expect.stringMatching(
        /^identity\.patient_key\.hospital_mrn\.hl7v2_authorities\.1: no hl7v2\.patient_id rule accepts ids of authority "GOODHEALTH"/,
      ),
    ]);
    // Listed twice, or a "|" (the key's separator) in an authority.
    const invalid = problemsOf(() =>
      loadConfig({ env: { MRN_HL7V2_AUTHORITIES: 'A,A', MRN_FHIR_SYSTEMS: 'urn:x,urn:x' } }),
    ).join('\n');
    expect(invalid).toContain('an authority is listed twice');
    expect(invalid).toContain('a system is listed twice');
    expect(
      problemsOf(() => loadConfig({ env: { MRN_HL7V2_AUTHORITIES: 'A|B' } })).join(),
    ).toContain('no "|"');
  });

  it('finds nothing to refuse in the shipped defaults', () => {
    expect(patientKeyProblems(loadConfig({ env: {} }))).toEqual([]);
  });
});
