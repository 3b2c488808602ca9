import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadRf2ExtendedMap, parseRf2ExtendedMap, resolveRf2 } from './rf2-extended-map.ts';
import { TerminologyFileError } from './terminology-file-error.ts';

const FILE = new URL(
  '../../test/fixtures/terminology/der2_iisssccRefset_ExtendedMapFull_TEST_20250301.txt',
  import.meta.url,
).pathname;

describe('RF2 ExtendedMap (our own test file in the NLM format)', () => {
  const map = loadRf2ExtendedMap(FILE);

  it('maps TRUE rows', () => {
    expect(resolveRf2(map, '38341003', {})).toEqual(['I10']);
    expect(resolveRf2(map, ' 44054006 ', {})).toEqual(['E11.9']);
  });

  it('age at onset: under 18 takes the first rule, else OTHERWISE TRUE; every group applies', () => {
    expect(resolveRf2(map, '100000001', { ageYears: 9 })).toEqual(['E10.9', 'Z79.4']);
    expect(resolveRf2(map, '100000001', { ageYears: 54 })).toEqual(['E11.9', 'Z79.4']);
    // Unknown age: the age rule cannot hold, OTHERWISE TRUE decides.
    expect(resolveRf2(map, '100000001', {})).toEqual(['E11.9', 'Z79.4']);
  });

  it('gender: male takes the rule; otherwise the OTHERWISE row has no target', () => {
    expect(resolveRf2(map, '100000002', { gender: 'male' })).toEqual(['N40.0']);
    expect(resolveRf2(map, '100000002', { gender: 'female' })).toEqual([]);
    expect(resolveRf2(map, '100000002', {})).toEqual([]);
  });

  it('in the map with no target: [], not in the map: undefined', () => {
    expect(resolveRf2(map, '100000003', {})).toEqual([]);
    expect(resolveRf2(map, '73211009', {})).toBeUndefined();
  });

  it('a row made inactive later no longer counts; rows of another refset are ignored', () => {
    expect(resolveRf2(map, '100000004', {})).toBeUndefined();
    expect(resolveRf2(map, '100000005', {})).toBeUndefined();
  });

  it('tries rules in mapPriority order whatever the file order', () => {
    const text = readFileSync(FILE, 'utf8').split('\r\n');
    const [header = '', ...rows] = text;
    const shuffled = parseRf2ExtendedMap([header, ...rows.reverse()].join('\n'));
    expect(resolveRf2(shuffled, '100000001', { ageYears: 9 })).toEqual(['E10.9', 'Z79.4']);
    expect(resolveRf2(shuffled, '100000002', { gender: 'male' })).toEqual(['N40.0']);
  });

  it('refuses a file that is not an ExtendedMap, a short row, or a target that is not ICD-10-CM', () => {
    expect(() => parseRf2ExtendedMap('id\tcode\n1\t2\n')).toThrow(TerminologyFileError);
    const header = readFileSync(FILE, 'utf8').split('\r\n')[0] ?? '';
    expect(() => parseRf2ExtendedMap(`${header}\nx\t20250301\t1\n`)).toThrow(/line 2 has 3 fields/);
    const bad = [
      'x',
      '20250301',
      '1',
      'm',
      '6011000124106',
      '1',
      '1',
      '1',
      'TRUE',
      '',
      'NOT A CODE',
      '',
      '',
    ];
    expect(() => parseRf2ExtendedMap(`${header}\n${bad.join('\t')}\n`)).toThrow(
      /line 2: mapTarget/,
    );
    expect(() => loadRf2ExtendedMap('/nonexistent/map.txt')).toThrow(TerminologyFileError);
  });
});
