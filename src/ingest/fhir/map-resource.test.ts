import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import { mapClinicalResource, parsePatient, patientFacets } from './map-resource.ts';
import { PUBLIC_FIXTURES } from '../../../test/support/public-fixtures.ts';

const FIXTURES = `${PUBLIC_FIXTURES}fhir`;
const load = (name: string) =>
  JSON.parse(readFileSync(`${FIXTURES}/${name}`, 'utf8')) as { resourceType: string; id: string };

const map = (resource: Record<string, unknown>) =>
  mapClinicalResource(resource as { resourceType: string; id: string }, ['body']);

describe('mapClinicalResource', () => {
  it("keeps a US Core Condition's ICD-10-CM and SNOMED codings; encounter-diagnosis is not on the problem list", () => {
    const mapped = map(load('condition-encounter-diagnosis-example1.json'));
    expect(mapped).toEqual({
      subject: 'Patient/example',
      kind: 'Condition',
      change: {
        type: 'upsert',
        item: {
          key: 'fhir:Condition/encounter-diagnosis-example1',
          kind: 'condition',
          fhirId: 'Condition/encounter-diagnosis-example1',
          source: 'fhir',
          codings: [
            { system: 'http://snomed.info/sct', code: '39065001', display: 'Burn of ear' },
            {
              system: 'http://hl7.org/fhir/sid/icd-10-cm',
              code: 'T20.21',
              display: 'Burn of second degree of ear [any part, except ear drum]',
            },
          ],
          problemList: false,
          effectiveAt: '2015-11-01',
        },
      },
    });
  });

  it("never keeps an Observation's valueString, note or narrative", () => {
    const mapped = map({
      resourceType: 'Observation',
      id: 'o1',
      status: 'final',
      text: { div: '<div>narrative</div>' },
      code: { coding: [{ system: 'http://loinc.org', code: '8310-5' }] },
      subject: { reference: 'Patient/p' },
      valueString: 'free text value',
      note: [{ text: 'note text' }],
    });
    const text = JSON.stringify(mapped);
    expect(text).not.toContain('free text value');
    expect(text).not.toContain('note text');
    expect(text).not.toContain('narrative');
    expect(mapped?.change).toMatchObject({ type: 'upsert', item: { status: 'final' } });
  });

  it('maps a coded value, a text reference range and removes entered-in-error results', () => {
    expect(
      map({
        resourceType: 'Observation',
        id: 'o2',
        status: 'final',
        subject: { reference: 'Patient/p' },
        valueCodeableConcept: { coding: [{ system: 'http://snomed.info/sct', code: '260385009' }] },
        referenceRange: [{ text: 'negative' }],
        effectivePeriod: { start: '2024-01-01' },
      })?.change,
    ).toMatchObject({
      item: { value: '260385009', referenceRange: 'negative', effectiveAt: '2024-01-01' },
    });
    expect(
      map({ resourceType: 'Observation', id: 'o3', status: 'entered-in-error' })?.change,
    ).toEqual({ type: 'remove', key: 'fhir:Observation/o3' });
  });

  it.each([
    ['MedicationRequest', 'medicationCodeableConcept', 'medication'],
    ['MedicationStatement', 'medicationCodeableConcept', 'medication'],
    ['Procedure', 'code', 'procedure'],
    ['Immunization', 'vaccineCode', 'immunization'],
    ['AllergyIntolerance', 'code', 'allergy'],
  ])('maps %s to %s', (type, field, kind) => {
    const subjectField =
      type === 'Immunization' || type === 'AllergyIntolerance' ? 'patient' : 'subject';
    const mapped = map({
      resourceType: type,
      id: 'x1',
      status: 'completed',
      clinicalStatus: { coding: [{ code: 'active' }] },
      [field]: { coding: [{ system: 'http://example.org/cs', code: 'C1' }] },
      [subjectField]: { reference: 'Patient/p' },
    });
    expect(mapped).toMatchObject({
      subject: 'Patient/p',
      kind: type,
      change: { item: { kind, codings: [{ code: 'C1' }] } },
    });
  });

  it('maps CarePlan categories', () => {
    expect(
      map({
        resourceType: 'CarePlan',
        id: 'cp',
        status: 'active',
        category: [{ coding: [{ system: 'http://snomed.info/sct', code: '698360004' }] }],
        subject: { reference: 'Patient/p' },
        period: { start: '2020-01-01' },
      })?.change,
    ).toMatchObject({
      item: {
        kind: 'care_plan',
        status: 'active',
        codings: [{ code: '698360004' }],
        effectiveAt: '2020-01-01',
      },
    });
  });

  it('ignores types it does not map and rejects wrong shapes with a location only', () => {
    expect(map({ resourceType: 'Encounter', id: 'e' })).toBeUndefined();
    try {
      map({ resourceType: 'Condition', id: 'c', code: { coding: 'SECRET' } });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(RequestValidationError);
      expect((error as Error).message).not.toContain('SECRET');
      expect((error as RequestValidationError).items[0]?.loc).toEqual(['body', 'code', 'coding']);
    }
  });
});

describe('patientFacets', () => {
  it('collects names, race, identifiers, phones, emails and addresses as text', () => {
    const patient = parsePatient(
      {
        resourceType: 'Patient',
        id: 'p1',
        extension: [
          {
            url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-race',
            extension: [
              { url: 'ombCategory', valueCoding: { code: '2106-3', display: 'White' } },
              { url: 'text', valueString: 'White' },
            ],
          },
        ],
        identifier: [{ value: 'MRN1' }, { value: '999-00-1111' }],
        name: [{ given: ['Ann', 'B'], family: 'Smith' }],
        telecom: [
          { system: 'phone', value: '555-1234' },
          { system: 'email', value: 'a@example.org' },
        ],
        address: [{ line: ['1 Main St'], city: 'Town', state: 'MA', postalCode: '01234' }],
        birthDate: '1970-01-02',
        gender: 'female',
      },
      ['body'],
    );
    expect(patientFacets(patient, 'p1')).toEqual({
      birthDate: '1970-01-02',
      gender: 'female',
      race: ['White'],
      names: ['Ann B Smith'],
      identifiers: ['p1', 'MRN1', '999-00-1111'],
      phones: ['555-1234'],
      emails: ['a@example.org'],
      addresses: ['1 Main St, Town, MA, 01234'],
    });
  });
});
