import { describe, expect, it } from 'vitest';
import { toValidationItems } from '../../interface/validation-error.ts';
import { ListQuerySchema, listQuerySchema } from './list-query.ts';

const parse = (query: Record<string, string | string[]>) => ListQuerySchema.safeParse(query);
const locs = (query: Record<string, string | string[]>) => {
  const result = parse(query);
  return result.success ? [] : toValidationItems(result.error.issues, ['query']).map((i) => i.loc);
};

describe('ListQuerySchema', () => {
  it('applies the defaults', () => {
    expect(parse({}).data).toEqual({ includeTotal: false, offset: 0, limit: 10 });
  });

  it('parses every parameter', () => {
    expect(
      parse({
        filter: 'relationship_id:rel-000001||relationship_id:rel-000002',
        search: 'relationship_id:0004',
        fields: 'relationship_id, metadata',
        include_total: 'true',
        offset: '20',
        limit: '1000',
      }).data,
    ).toEqual({
      filterIds: new Set(['rel-000001', 'rel-000002']),
      search: '0004',
      fields: ['relationship_id', 'metadata'],
      includeTotal: true,
      offset: 20,
      limit: 1000,
    });
  });

  it('keeps a colon inside the value', () => {
    expect(parse({ filter: 'relationship_id:a:b' }).data?.filterIds).toEqual(new Set(['a:b']));
  });

  it('takes the last of a repeated parameter', () => {
    expect(parse({ limit: ['5', '7'] }).data?.limit).toBe(7);
  });

  it.each(['false', '0', 'no', 'off', 'FALSE'])('reads include_total=%s as false', (v) => {
    expect(parse({ include_total: v }).data?.includeTotal).toBe(false);
  });

  it.each([
    [{ limit: '0' }, ['query', 'limit']],
    [{ limit: '1001' }, ['query', 'limit']],
    [{ limit: 'ten' }, ['query', 'limit']],
    [{ limit: '1.5' }, ['query', 'limit']],
    [{ offset: '-1' }, ['query', 'offset']],
    [{ include_total: 'maybe' }, ['query', 'include_total']],
    [{ fields: 'relationship_id,score' }, ['query', 'fields']],
    [{ fields: '' }, ['query', 'fields']],
    [{ filter: 'cui:C0000001' }, ['query', 'filter']],
    [{ filter: 'relationship_id' }, ['query', 'filter']],
    [{ filter: 'relationship_id:a||' }, ['query', 'filter']],
    [{ filter: 'relationship_id:' }, ['query', 'filter']],
    [{ search: 'preferred_name:x' }, ['query', 'search']],
    [{ search: 'nocolon' }, ['query', 'search']],
    [{ sort: 'relationship_id:asc' }, ['query', 'sort']],
    [{ sort: '' }, ['query', 'sort']],
  ])('rejects %j at %j', (query, loc) => {
    expect(locs(query)).toEqual([loc]);
  });

  it('refuses a limit above the maximum it was built with, as FastAPI words it', () => {
    const result = listQuerySchema(50).safeParse({ limit: '51' });
    expect(result.error?.issues).toMatchObject([
      {
        path: ['limit'],
        message: 'Input should be less than or equal to 50',
        params: { type: 'less_than_equal' },
      },
    ]);
    expect(listQuerySchema(50).safeParse({ limit: '50' }).data?.limit).toBe(50);
  });

  it('says no sort field is supported', () => {
    const result = parse({ sort: 'relationship_id:desc' });
    expect(result.error?.issues[0]?.message).toBe('no sort field is currently supported');
  });

  it('reports every bad parameter at once', () => {
    expect(locs({ limit: '0', offset: 'x', sort: 'a' })).toEqual([
      ['query', 'offset'],
      ['query', 'limit'],
      ['query', 'sort'],
    ]);
  });
});
