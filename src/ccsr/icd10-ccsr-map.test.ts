import { describe, expect, it } from 'vitest';
import { loadCcsrTables } from './ccsr-tables.ts';
import {
  buildIcd10CcsrMap,
  ccsrCategoriesForIcd10,
  loadIcd10CcsrMap,
  lookupCcsrCategories,
  normalizeIcd10,
} from './icd10-ccsr-map.ts';

const HEADER =
  'icd10cm_code,icd10cm_description,ccsr_category,inpatient_default,outpatient_default';

describe('ccsrCategoriesForIcd10 (shipped v2023.1 table)', () => {
  it('maps E11.9 with or without the dot, in any case, trimmed', () => {
    for (const code of ['E11.9', 'E119', 'e11.9', '  e119 ']) {
      expect(ccsrCategoriesForIcd10(code, 'outpatient_default')).toEqual(['END002']);
      expect(ccsrCategoriesForIcd10(code, 'all')).toEqual(['END002', 'END005']);
    }
  });

  it('maps I10 to CIR007', () => {
    expect(ccsrCategoriesForIcd10('I10', 'outpatient_default')).toEqual(['CIR007']);
    expect(ccsrCategoriesForIcd10('i10', 'all')).toEqual(['CIR007']);
  });

  it('returns [] for unknown or empty codes', () => {
    for (const code of ['Z99.999', 'E11.99X', 'ZZZ', '', '   ', 'END002']) {
      expect(ccsrCategoriesForIcd10(code, 'all')).toEqual([]);
      expect(ccsrCategoriesForIcd10(code, 'outpatient_default')).toEqual([]);
    }
  });

  it('gives only outpatient-default rows in that mode (B95.0 has none, only INF003 in all)', () => {
    expect(ccsrCategoriesForIcd10('B95.0', 'all')).toEqual(['INF003']);
    expect(ccsrCategoriesForIcd10('B95.0', 'outpatient_default')).toEqual([]);
    // A000: DIG001 (Y) and INF003 (N)
    expect(ccsrCategoriesForIcd10('A00.0', 'all')).toEqual(['DIG001', 'INF003']);
    expect(ccsrCategoriesForIcd10('A00.0', 'outpatient_default')).toEqual(['DIG001']);
  });

  it('holds every code of the table, each mapping to 1..6 real categories, none a placeholder', () => {
    const map = loadIcd10CcsrMap();
    expect(map.size).toBe(74_549);
    const tables = loadCcsrTables();
    let outpatientDefaults = 0;
    const wrong: string[] = [];
    for (const [code, entry] of map) {
      if (entry.all.length < 1 || entry.all.length > 6) wrong.push(`${code}: count`);
      for (const category of entry.all) {
        if (!tables.isCategory(category)) wrong.push(`${code}: ${category}`);
      }
      for (const category of entry.outpatientDefault) {
        if (!entry.all.includes(category)) wrong.push(`${code}: outpatient ${category}`);
      }
      outpatientDefaults += entry.outpatientDefault.length;
    }
    expect(wrong).toEqual([]);
    expect(outpatientDefaults).toBeLessThan(map.size);
  });

  it('loads once per process and hands out copies', () => {
    expect(loadIcd10CcsrMap()).toBe(loadIcd10CcsrMap());
    const first = ccsrCategoriesForIcd10('E11.9', 'all');
    first.push('MUTATED');
    expect(ccsrCategoriesForIcd10('E11.9', 'all')).toEqual(['END002', 'END005']);
  });
});

describe('buildIcd10CcsrMap', () => {
  const csv = [
    HEADER,
    'R69,"Illness, unspecified",SYM017,N,N',
    'R69,"Illness, unspecified",XXX111,X,Y',
    'Z0000,"Encounter for general adult medical examination without abnormal findings",XXX000,Y,Y',
    'Z0000,"Encounter for general adult medical examination without abnormal findings",NoDX1,Y,Y',
    'Q999,"Invalid, made up",InvlDX,Y,Y',
    'E119,Type 2 diabetes mellitus without complications,END002,Y,Y',
    'E119,Type 2 diabetes mellitus without complications,END005,N,N',
    '',
  ].join('\r\n');
  const map = buildIcd10CcsrMap(csv);

  it('never returns a placeholder category; a placeholder-only code maps to nothing', () => {
    expect(lookupCcsrCategories(map, 'R69', 'all')).toEqual(['SYM017']);
    expect(lookupCcsrCategories(map, 'R69', 'outpatient_default')).toEqual([]);
    expect(lookupCcsrCategories(map, 'Z00.00', 'all')).toEqual([]);
    expect(lookupCcsrCategories(map, 'Z00.00', 'outpatient_default')).toEqual([]);
    expect(lookupCcsrCategories(map, 'Q99.9', 'all')).toEqual([]);
  });

  it('parses quoted descriptions with commas and CRLF lines', () => {
    expect(lookupCcsrCategories(map, 'e11.9', 'all')).toEqual(['END002', 'END005']);
    expect(lookupCcsrCategories(map, 'E119', 'outpatient_default')).toEqual(['END002']);
  });

  it('refuses a table with unreadable rows rather than silently dropping them', () => {
    expect(() => buildIcd10CcsrMap(`${HEADER}\nE119,desc,END002,Y\n`)).toThrow(/unreadable/);
  });

  it('normalizes codes', () => {
    expect(normalizeIcd10(' e11.9 ')).toBe('E119');
  });
});
