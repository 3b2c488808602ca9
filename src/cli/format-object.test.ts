import { describe, expect, it } from 'vitest';
import { cellText, formatObject } from './format-object.ts';

describe('cellText', () => {
  it.each([
    [null, ''],
    [undefined, ''],
    [7.5, '7.5'],
    [false, 'false'],
    [['a', 1, true], 'a, 1, true'],
    [[{ a: 1 }], '[{"a":1}]'],
    [{}, '{}'],
  ])('writes %j as %j', (value, text) => {
    expect(cellText(value)).toBe(text);
  });
});

describe('formatObject', () => {
  it('puts fields in a table, nested objects as dotted fields, lists of objects in their own tables', () => {
    const text = formatObject({
      id: 'p-1',
      flags: ['a', 'b'],
      meta: { count: 2, source: { name: 'sim' } },
      items: [
        { rank: 1, evidence: { studies: 4 } },
        { rank: 2, extra: 'x' },
      ],
      empty: [],
    });
    expect(text.split('\n')).toEqual([
      'field             value',
      '----------------  -----',
      'id                p-1',
      'flags             a, b',
      'meta.count        2',
      'meta.source.name  sim',
      'empty',
      '',
      'items (2):',
      'rank  evidence.studies  extra',
      '----  ----------------  -----',
      '1     4',
      '2                       x',
    ]);
  });

  it('prints only the lists when there is no other field', () => {
    expect(formatObject({ data: [{ a: 1 }] })).toBe('data (1):\na\n-\n1');
  });
});
