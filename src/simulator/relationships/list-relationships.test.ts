import { describe, expect, it } from 'vitest';
import { loadCcsrTables } from '../../ccsr/ccsr-tables.ts';
import { ListQuerySchema } from './list-query.ts';
import { listRelationships } from './list-relationships.ts';
import { buildRelationshipGraph } from './relationship-graph.ts';

const graph = buildRelationshipGraph(1, 300, loadCcsrTables());
const list = (query: Record<string, string>) =>
  listRelationships(graph, ListQuerySchema.parse(query));
const ids = (page: { data: { relationship_id?: string }[] }) =>
  page.data.map((r) => r.relationship_id);

describe('listRelationships', () => {
  it('returns the first ten in id order, without total by default', () => {
    const page = list({});
    expect(ids(page)).toEqual(graph.relationships.slice(0, 10).map((r) => r.relationship_id));
    expect(page).not.toHaveProperty('total');
  });

  it('pages with offset and limit and counts all matches with include_total', () => {
    const page = list({ offset: '295', limit: '10', include_total: 'true' });
    expect(ids(page)).toEqual([
      'rel-000296',
      'rel-000297',
      'rel-000298',
      'rel-000299',
      'rel-000300',
    ]);
    expect(page.total).toBe(300);
    expect(list({ offset: '300', include_total: 'true' })).toEqual({ data: [], total: 300 });
  });

  it('filters exact ids with OR, ignoring unknown ones, in id order', () => {
    const page = list({
      filter: 'relationship_id:rel-000200||relationship_id:rel-000003||relationship_id:nope',
      include_total: 'true',
    });
    expect(ids(page)).toEqual(['rel-000003', 'rel-000200']);
    expect(page.total).toBe(2);
  });

  it('searches a substring of the id, and combines search with filter', () => {
    expect(ids(list({ search: 'relationship_id:0029', limit: '100' }))).toEqual([
      'rel-000029',
      'rel-000290',
      ...Array.from({ length: 9 }, (_, i) => `rel-00029${i + 1}`),
    ]);
    expect(
      ids(
        list({
          search: 'relationship_id:29',
          filter: 'relationship_id:rel-000029||relationship_id:rel-000030',
        }),
      ),
    ).toEqual(['rel-000029']);
  });

  it('projects the requested fields only', () => {
    const [item] = list({ fields: 'relationship_id,to_concept', limit: '1' }).data;
    expect(Object.keys(item ?? {}).sort()).toEqual(['relationship_id', 'to_concept']);
    expect(item?.to_concept).toEqual(graph.relationships[0]?.to_concept);
  });
});
