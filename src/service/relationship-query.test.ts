import { describe, expect, it } from 'vitest';
import { ServiceParamsError } from './errors/service-params-error.ts';
import { buildRelationshipQuery, type RelationshipListParams } from './relationship-query.ts';

const query = (params?: RelationshipListParams): Record<string, string> =>
  Object.fromEntries(buildRelationshipQuery(params));

describe('buildRelationshipQuery', () => {
  it('sends nothing for no parameters', () => {
    expect(query()).toEqual({});
  });

  it('joins filter alternatives with ||', () => {
    expect(query({ filter: { relationship_id: ['a', 'b'] } })).toEqual({
      filter: 'relationship_id:a||relationship_id:b',
    });
    expect(query({ filter: { relationship_id: 'a' } })).toEqual({ filter: 'relationship_id:a' });
    expect(query({ filter: 'relationship_id:x' })).toEqual({ filter: 'relationship_id:x' });
  });

  it('formats search and fields', () => {
    expect(query({ search: { relationship_id: 'abc' } })).toEqual({
      search: 'relationship_id:abc',
    });
    expect(query({ search: 'relationship_id:abc' })).toEqual({ search: 'relationship_id:abc' });
    expect(query({ fields: ['relationship_id', 'metadata'] })).toEqual({
      fields: 'relationship_id,metadata',
    });
    expect(query({ fields: 'relationship_id, to_concept' })).toEqual({
      fields: 'relationship_id,to_concept',
    });
  });

  it('passes sort, include_total, offset and limit through', () => {
    expect(
      query({ sort: 'relationship_id:asc', include_total: true, offset: 0, limit: 1 }),
    ).toEqual({ sort: 'relationship_id:asc', include_total: 'true', offset: '0', limit: '1' });
    expect(query({ include_total: false })).toEqual({ include_total: 'false' });
  });

  it('URL-encodes values when serialised', () => {
    expect(buildRelationshipQuery({ filter: { relationship_id: ['a&b', 'c d'] } }).toString()).toBe(
      'filter=relationship_id%3Aa%26b%7C%7Crelationship_id%3Ac+d',
    );
  });

  it.each<[string, RelationshipListParams]>([
    ['negative offset', { offset: -1 }],
    ['fractional offset', { offset: 1.5 }],
    ['NaN offset', { offset: Number.NaN }],
    ['zero limit', { limit: 0 }],
    ['fractional limit', { limit: 2.5 }],
    ['infinite limit', { limit: Number.POSITIVE_INFINITY }],
    ['empty filter alternatives', { filter: { relationship_id: [] } }],
    ['empty filter object', { filter: {} }],
    ['a filter value containing ||', { filter: { relationship_id: 'a||b' } }],
    ['a field name with a colon', { filter: { 'a:b': 'c' } }],
    ['two search fields', { search: { relationship_id: 'a', cui: 'b' } }],
    ['no search field', { search: {} }],
    ['an unknown projection field', { fields: ['relationship_id', 'secret'] }],
  ])('rejects %s', (_name, params) => {
    expect(() => buildRelationshipQuery(params)).toThrow(ServiceParamsError);
  });

  it('names the parameter at fault with a stable code', () => {
    try {
      buildRelationshipQuery({ limit: 0 });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ServiceParamsError);
      expect((error as ServiceParamsError).code).toBe('ERR_SERVICE_PARAMS');
      expect((error as ServiceParamsError).message).toMatch(/limit/);
    }
  });
});
