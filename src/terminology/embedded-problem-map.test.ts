import { describe, expect, it } from 'vitest';
import {
  ccsrCategoriesForIcd10,
  loadIcd10CcsrMap,
  normalizeIcd10,
} from '../ccsr/icd10-ccsr-map.ts';
import { icd10Description } from '../ccsr/icd10-descriptions.ts';
import { lookupCodeMap } from './code-map.ts';
import { embeddedMapRows, embeddedProblemMap } from './embedded-problem-map.ts';

/** Verhoeff check digit (the last digit of every SNOMED CT identifier). */
function verhoeffValid(id: string): boolean {
  const d = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
    [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
    [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
    [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
    [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
    [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
  ];
  const p = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
    [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
    [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
    [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
    [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
  ];
  let c = 0;
  [...id].reverse().forEach((ch, i) => {
    c = d[c]?.[p[i % 8]?.[Number(ch)] ?? 0] ?? 0;
  });
  return c === 0;
}

describe('the embedded SNOMED CT -> ICD-10-CM table', () => {
  const rows = embeddedMapRows();

  it('holds a few dozen concepts, each once, with a basis', () => {
    expect(rows.length).toBeGreaterThanOrEqual(40);
    expect(new Set(rows.map((r) => r.snomedCtId)).size).toBe(rows.length);
    for (const row of rows) expect(['title', 'unspecified', 'index']).toContain(row.basis);
  });

  it('every SNOMED CT id is well formed: digits, Verhoeff check digit, concept partition', () => {
    const bad = rows
      .filter(
        (r) =>
          !/^\d{6,18}$/.test(r.snomedCtId) ||
          !verhoeffValid(r.snomedCtId) ||
          !['00', '10'].includes(r.snomedCtId.slice(-3, -1)),
      )
      .map((r) => r.snomedCtId);
    expect(bad).toEqual([]);
    expect(verhoeffValid('38341004')).toBe(false);
  });

  it('every target is a billable ICD-10-CM code of the shipped CCSR table, with its official description', () => {
    const ccsr = loadIcd10CcsrMap();
    const wrong = rows.filter((r) => !ccsr.has(normalizeIcd10(r.icd10cm))).map((r) => r.icd10cm);
    expect(wrong).toEqual([]);
    for (const row of rows) {
      expect(ccsrCategoriesForIcd10(row.icd10cm, 'all').length).toBeGreaterThan(0);
      expect(row.icd10cmDescription).toBe(icd10Description(row.icd10cm));
    }
  });

  it('maps the Synthea problems of Done-when 3 to CIR007 and END002', () => {
    const map = embeddedProblemMap();
    expect(lookupCodeMap(map, 'http://snomed.info/sct', '38341003')).toEqual(['I10']);
    expect(lookupCodeMap(map, 'SCT', '59621000')).toEqual(['I10']);
    expect(lookupCodeMap(map, 'http://snomed.info/sct', '44054006')).toEqual(['E11.9']);
    expect(ccsrCategoriesForIcd10('I10', 'outpatient_default')).toEqual(['CIR007']);
    expect(ccsrCategoriesForIcd10('E11.9', 'outpatient_default')).toEqual(['END002']);
    expect(lookupCodeMap(map, 'http://snomed.info/sct', '195662009')).toBeUndefined();
  });
});
