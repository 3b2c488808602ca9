import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import { mapClinicalResource, parsePatient, patientFacets } from './map-resource.ts';
import { PUBLIC_FIXTURES } from '../../../test/support/public-fixtures.ts';

const FIXTURES = `${PUBLIC_FIXTURES}fhir`;
/** The Prevent examples (test/fixtures/fhir/prevent/SOURCES.md). */
const PREVENT = new URL('../../../test/fixtures/fhir/prevent/', import.meta.url).pathname;
const load = (name: string, dir = FIXTURES) =>
  JSON.parse(readFileSync(`${dir}/${name}`, 'utf8')) as { resourceType: string; id: string };

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

describe('what Prevent reads (FHIR examples: test/fixtures/fhir/prevent/SOURCES.md)', () => {
  const example = (name: string) => load(name, PREVENT);

  it('keeps a social-history Observation’s category and its coded value with its system', () => {
    expect(map(example('us-core-some-day-smoker.json'))?.change).toMatchObject({
      type: 'upsert',
      item: {
        kind: 'observation',
        categories: ['social-history'],
        codings: [{ system: 'http://loinc.org', code: '72166-2' }],
        value: '428041000124106',
        valueCoding: { system: 'http://snomed.info/sct', code: '428041000124106' },
      },
    });
  });

  it('keeps a blood pressure panel’s components with their UCUM units', () => {
    const mapped = map(example('r4-Observation-blood-pressure.json'));
    const item = (mapped?.change as { item: { categories: string[]; components: object[] } }).item;
    expect(item.categories).toEqual(['vital-signs']);
    expect(
      (item.components as { codings: { code: string }[] }[]).map((c) => ({
        ...c,
        codings: c.codings.map((coding) => coding.code),
      })),
    ).toEqual([
      {
        codings: ['8480-6', '271649006', 'bp-s'],
        value: 107,
        unit: 'mmHg',
        unitCode: 'mm[Hg]',
      },
      { codings: ['8462-4'], value: 60, unit: 'mmHg', unitCode: 'mm[Hg]' },
    ]);
  });

  it('maps a FamilyMemberHistory to the relative and the conditions’ codes, never its note', () => {
    const mapped = map(example('r4-FamilyMemberHistory-father.json'));
    expect([mapped?.subject, mapped?.kind, mapped?.change.type]).toEqual([
      'Patient/example',
      'FamilyMemberHistory',
      'upsert',
    ]);
    expect((mapped?.change as { item: object }).item).toEqual({
      key: 'fhir:FamilyMemberHistory/father',
      kind: 'family_history',
      fhirId: 'FamilyMemberHistory/father',
      source: 'fhir',
      relationship: { system: 'http://terminology.hl7.org/CodeSystem/v3-RoleCode', code: 'FTH' },
      codings: [
        { system: 'http://snomed.info/sct', code: '315619001', display: 'Myocardial Infarction' },
      ],
      status: 'completed',
      effectiveAt: '2011-03-18',
    });
    expect(JSON.stringify(mapped)).not.toContain('fishing');
    expect(
      map({ resourceType: 'FamilyMemberHistory', id: 'x', status: 'entered-in-error' })?.change,
    ).toEqual({ type: 'remove', key: 'fhir:FamilyMemberHistory/x' });
  });

  it('keeps only the coded answers of LOINC questions of a QuestionnaireResponse', () => {
    const mapped = map(example('r4-QuestionnaireResponse-ussg-fht-answers.json'));
    const item = (mapped?.change as { item: { kind: string; components: object[] } }).item;
    expect(item.kind).toBe('questionnaire');
    expect(item.components).toContainEqual({
      codings: [{ system: 'http://loinc.org', code: '54132-6' }],
      value: 'LA32-8',
      valueCoding: { system: 'http://loinc.org', code: 'LA32-8' },
    });
    expect(item.components).toContainEqual({
      codings: [{ system: 'http://loinc.org', code: '8302-2' }],
      value: 63,
    });
    const text = JSON.stringify(mapped);
    for (const planted of ['Annie Proband', 'Susan', '1966-04-04', 'Lou Gehrigs', 'Name']) {
      expect(text).not.toContain(planted);
    }
    // Link ids that are LOINC codes (`/68519-8`) name their question too.
    expect(
      (
        map(example('us-core-QuestionnaireResponse-AUDIT-C.json'))?.change as {
          item: { components: { codings: { code: string }[] }[] };
        }
      ).item.components.map((c) => c.codings[0]?.code),
    ).toEqual(['68517-2', '68519-8', '68520-6', '75626-2']);
    // Uncoded questions answered in free text: nothing.
    expect(map(example('r4-QuestionnaireResponse-f201.json'))?.change).toMatchObject({
      item: { kind: 'questionnaire', codings: [] },
    });
    expect(JSON.stringify(map(example('r4-QuestionnaireResponse-f201.json')))).not.toContain(
      'house dust',
    );
  });
});
