import { describe, expect, it } from 'vitest';
import { icd10FromTranslate } from './terminology-server.ts';
import { TerminologyServerError } from './terminology-server-error.ts';

const ICD10 = 'http://hl7.org/fhir/sid/icd-10-cm';
const match = (
  kind: 'equivalence' | 'relationship',
  code: string,
  system: string,
  target: string,
) => ({
  name: 'match',
  part: [
    { name: kind, valueCode: code },
    { name: 'concept', valueCoding: { system, code: target } },
    { name: 'source', valueUri: 'http://example.org/ConceptMap/x' },
  ],
});

describe('icd10FromTranslate ($translate answers)', () => {
  it('takes ICD-10-CM concepts of R4 and R5 matches, formatted, once each', () => {
    const body = {
      resourceType: 'Parameters',
      parameter: [
        { name: 'result', valueBoolean: true },
        { name: 'message', valueString: 'ok' },
        match('equivalence', 'equivalent', ICD10, 'E119'),
        match(
          'relationship',
          'source-is-narrower-than-target',
          'urn:oid:2.16.840.1.113883.6.90',
          'I10',
        ),
        match('equivalence', 'wider', ICD10, 'E11.9'),
      ],
    };
    expect(icd10FromTranslate(body)).toEqual(['E11.9', 'I10']);
  });

  it('leaves out unmatched, disjoint and not-related-to matches and other systems', () => {
    const body = {
      resourceType: 'Parameters',
      parameter: [
        { name: 'result', valueBoolean: true },
        match('equivalence', 'unmatched', ICD10, 'I10'),
        match('equivalence', 'disjoint', ICD10, 'I11.9'),
        match('relationship', 'not-related-to', ICD10, 'I12.9'),
        match('equivalence', 'equivalent', 'http://hl7.org/fhir/sid/icd-10', 'I10'),
        match('equivalence', 'equivalent', ICD10, 'not a code'),
      ],
    };
    expect(icd10FromTranslate(body)).toEqual([]);
  });

  it('result false gives nothing, whatever the matches; a body that is not Parameters is an error', () => {
    expect(
      icd10FromTranslate({
        resourceType: 'Parameters',
        parameter: [
          { name: 'result', valueBoolean: false },
          match('equivalence', 'equivalent', ICD10, 'I10'),
        ],
      }),
    ).toEqual([]);
    expect(() => icd10FromTranslate({ resourceType: 'OperationOutcome' })).toThrow(
      TerminologyServerError,
    );
    expect(() => icd10FromTranslate('nope')).toThrow(/not Parameters/);
  });
});
