import { describe, expect, it } from 'vitest';
import { loadCcsrTables } from './ccsr-tables.ts';

describe('loadCcsrTables', () => {
  const tables = loadCcsrTables();

  it('holds the 543 real v2023.1 categories and 23 body systems', () => {
    expect(tables.categories).toHaveLength(543);
    expect(tables.bodySystems).toHaveLength(23);
  });

  it('knows END002 and CIR007 with their descriptions and body systems', () => {
    expect(tables.category('END002')).toEqual({
      code: 'END002',
      description: 'Diabetes mellitus without complication',
      bodySystem: 'END',
    });
    expect(tables.category('CIR007')?.description).toBe('Essential hypertension');
    expect(tables.bodySystem('CIR')?.description).toBe('Diseases of the circulatory system');
  });

  it('rejects the placeholder codes and unknown codes', () => {
    for (const code of ['XXX000', 'XXX111', 'NoDX1', 'InvlDX', 'END999', 'end002', '']) {
      expect(tables.isCategory(code)).toBe(false);
    }
  });

  it('parses descriptions that contain commas', () => {
    const withComma = tables.categories.filter((c) => c.description.includes(','));
    expect(withComma.length).toBeGreaterThan(0);
    for (const c of withComma) expect(c.code).toMatch(/^[A-Z]{3}\d{3}$/);
  });
});
