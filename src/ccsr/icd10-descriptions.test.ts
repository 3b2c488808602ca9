import { describe, expect, it } from 'vitest';
import {
  buildIcd10Descriptions,
  icd10Description,
  loadIcd10Descriptions,
} from './icd10-descriptions.ts';

describe('icd10Description (shipped v2023.1 table)', () => {
  it('names E11.9 and I10 however the code is written', () => {
    for (const code of ['E11.9', 'E119', ' e11.9 ']) {
      expect(icd10Description(code)).toBe('Type 2 diabetes mellitus without complications');
    }
    expect(icd10Description('I10')).toBe('Essential (primary) hypertension');
  });

  it('keeps quoted descriptions whole, commas included', () => {
    expect(icd10Description('A00.0')).toBe('Cholera due to Vibrio cholerae 01, biovar cholerae');
  });

  it('has one description per distinct code of the table, and none for unknown codes', () => {
    expect(loadIcd10Descriptions().size).toBe(74_549);
    for (const code of ['Z99.999', 'END002', '', 'E11.99X']) {
      expect(icd10Description(code)).toBeUndefined();
    }
  });
});

describe('buildIcd10Descriptions', () => {
  it('refuses a table with a row it cannot read', () => {
    const header =
      'icd10cm_code,icd10cm_description,ccsr_category,inpatient_default,outpatient_default';
    expect(() => buildIcd10Descriptions(`${header}\r\nE119\r\n`)).toThrow(/no readable/);
    const ok = buildIcd10Descriptions(`${header}\r\nE119,Type 2 diabetes,END002,Y,Y\r\n`);
    expect([...ok]).toEqual([['E119', 'Type 2 diabetes']]);
  });
});
