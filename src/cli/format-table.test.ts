import { describe, expect, it } from 'vitest';
import { formatTable } from './format-table.ts';

describe('formatTable', () => {
  it('aligns columns under a rule and cuts long cells', () => {
    const text = formatTable(
      ['id', 'name'],
      [
        ['r1', 'short'],
        ['r22', 'a much longer name'],
      ],
      10,
    );
    expect(text.split('\n')).toEqual([
      'id   name',
      '---  ----------',
      'r1   short',
      'r22  a much lo…',
    ]);
  });
});
