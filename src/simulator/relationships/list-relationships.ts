import type { Relationship, RelationshipProjection } from '../../interface/relationship.ts';
import type { ListQuery } from './list-query.ts';
import type { RelationshipGraph } from './relationship-graph.ts';

export interface RelationshipPage {
  data: RelationshipProjection[];
  total?: number;
}

function project(relationship: Relationship, fields: ListQuery['fields']): RelationshipProjection {
  if (fields === undefined) return relationship;
  const picked: RelationshipProjection = {};
  for (const field of fields) {
    if (relationship[field] !== undefined) Object.assign(picked, { [field]: relationship[field] });
  }
  return picked;
}

/** One page of the graph in id order: filter and search combine with AND. */
export function listRelationships(graph: RelationshipGraph, query: ListQuery): RelationshipPage {
  const { filterIds, search } = query;
  let matching: readonly Relationship[];
  if (filterIds !== undefined) {
    // Exact ids: look each up instead of scanning, then restore id order.
    matching = [...filterIds]
      .map((id) => graph.get(id))
      .filter((r) => r !== undefined)
      .sort((a, b) => (a.relationship_id < b.relationship_id ? -1 : 1));
  } else {
    matching = graph.relationships;
  }
  if (search !== undefined) matching = matching.filter((r) => r.relationship_id.includes(search));
  const data = matching
    .slice(query.offset, query.offset + query.limit)
    .map((r) => project(r, query.fields));
  return query.includeTotal ? { data, total: matching.length } : { data };
}
