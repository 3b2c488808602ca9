import { describe, expect, it } from 'vitest';
import { lookupCodeMap } from './code-map.ts';
import { parseCsvCodeMap } from './csv-code-map.ts';
import { TerminologyFileError } from './terminology-file-error.ts';

describe('parseCsvCodeMap (system,code,icd10cm)', () => {
  const map = parseCsvCodeMap(
    [
      '\uFEFFsystem,code,icd10cm,description',
      'I9,401.9,I10,"Hypertension, unspecified"',
      'http://hl7.org/fhir/sid/icd-9-cm,250.00,E119,',
      'urn:oid:1.2.840.114350.1.13.99,PROB-77,E78.5,',
      'urn:oid:1.2.840.114350.1.13.99,PROB-78,E11.9,',
      'urn:oid:1.2.840.114350.1.13.99,PROB-78,Z79.4,',
      '',
    ].join('\r\n'),
  );

  it('maps ICD-9-CM under any of its names, with or without the dot in the target', () => {
    for (const system of [
      'I9',
      'I9C',
      'http://hl7.org/fhir/sid/icd-9-cm',
      'urn:oid:2.16.840.1.113883.6.103',
    ]) {
      expect(lookupCodeMap(map, system, '401.9')).toEqual(['I10']);
      expect(lookupCodeMap(map, system, ' 250.00 ')).toEqual(['E11.9']);
    }
  });

  it('maps local codes by their system; several rows give several targets', () => {
    expect(lookupCodeMap(map, 'urn:oid:1.2.840.114350.1.13.99', 'PROB-77')).toEqual(['E78.5']);
    expect(lookupCodeMap(map, 'URN:OID:1.2.840.114350.1.13.99', 'PROB-78')).toEqual([
      'E11.9',
      'Z79.4',
    ]);
    expect(lookupCodeMap(map, 'urn:oid:9.9.9', 'PROB-77')).toBeUndefined();
    expect(lookupCodeMap(map, 'I9', '999.9')).toBeUndefined();
  });

  it('refuses rows without a target or with a target that is not ICD-10-CM, by line', () => {
    expect(() => parseCsvCodeMap('system,code,icd10cm\nI9,401.9,\n')).toThrow(/line 2 needs/);
    expect(() => parseCsvCodeMap('system,code,icd10cm\nI9,401.9,I10\nI9,1,hello\n')).toThrow(
      /line 3: icd10cm is not an ICD-10-CM code/,
    );
    expect(() => parseCsvCodeMap('code,icd10cm\n401.9,I10\n')).toThrow(TerminologyFileError);
  });
});
