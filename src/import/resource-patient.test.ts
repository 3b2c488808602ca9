import { describe, expect, it } from 'vitest';
import { patientIdOf } from './resource-patient.ts';

describe('patientIdOf', () => {
  it("takes a Patient's own id", () => {
    expect(patientIdOf({ resourceType: 'Patient', id: 'p-1' })).toBe('p-1');
    expect(patientIdOf({ resourceType: 'Patient' })).toBeUndefined();
  });

  it('reads subject, then patient, relative or absolute, with or without a version', () => {
    expect(patientIdOf({ resourceType: 'Condition', subject: { reference: 'Patient/a.1' } })).toBe(
      'a.1',
    );
    expect(
      patientIdOf({
        resourceType: 'AllergyIntolerance',
        patient: { reference: 'https://ehr.example/fhir/Patient/x-2/_history/3' },
      }),
    ).toBe('x-2');
  });

  it('names no patient for another subject or a malformed reference', () => {
    expect(patientIdOf({ resourceType: 'Observation', subject: { reference: 'Group/g' } })).toBe(
      undefined,
    );
    expect(patientIdOf({ resourceType: 'Observation', subject: { reference: 'Patient/' } })).toBe(
      undefined,
    );
    expect(patientIdOf({ resourceType: 'Observation', subject: 'Patient/1' })).toBeUndefined();
  });
});
