import { describe, expect, it } from 'vitest';
import { loadCcsrTables } from '../../ccsr/ccsr-tables.ts';
import { RelationshipSchema } from '../../interface/relationship.ts';
import { buildRelationshipGraph, relationshipId } from './relationship-graph.ts';

const tables = loadCcsrTables();

describe('buildRelationshipGraph', () => {
  const graph = buildRelationshipGraph(1, 5000, tables);

  it('builds the requested number of relationships with stable ids', () => {
    expect(graph.relationships).toHaveLength(5000);
    expect(graph.relationships[0]?.relationship_id).toBe('rel-000001');
    expect(graph.relationships[4999]?.relationship_id).toBe('rel-005000');
    expect(graph.get('rel-000042')?.relationship_id).toBe('rel-000042');
    expect(graph.get('rel-005001')).toBeUndefined();
    expect(relationshipId(1_234_567)).toBe('rel-1234567');
  });

  it('is the same for the same seed and differs for another', () => {
    expect(JSON.stringify(buildRelationshipGraph(1, 5000, tables).relationships)).toBe(
      JSON.stringify(graph.relationships),
    );
    expect(JSON.stringify(buildRelationshipGraph(2, 5000, tables).relationships)).not.toBe(
      JSON.stringify(graph.relationships),
    );
  });

  it('fits the interface schema, with integer counts and ISO datetimes', () => {
    for (const r of graph.relationships) {
      expect(RelationshipSchema.safeParse(r).success).toBe(true);
    }
    const withMetadata = graph.relationships.filter((r) => r.metadata !== undefined);
    expect(withMetadata.length).toBeGreaterThan(4500);
    for (const { metadata: m } of withMetadata) {
      expect(m?.num_significant_findings).toBeLessThanOrEqual(m?.num_findings ?? -1);
      expect(m?.num_experimental_trials).toBeLessThanOrEqual(m?.num_studies ?? -1);
      expect(Date.parse(m?.last_updated ?? '')).toBeGreaterThanOrEqual(
        Date.parse(m?.last_published_date ?? ''),
      );
      expect(typeof m?.median_effect_size).toBe('number');
    }
  });

  it('gives concepts CUI-shaped unique ids and real CCSR codes that agree with their body systems', () => {
    const byCui = new Map<string, string>();
    for (const r of graph.relationships) {
      expect(r.from_concept).not.toBe(r.to_concept);
      for (const c of [r.from_concept, r.to_concept]) {
        expect(c.cui).toMatch(/^C\d{7}$/);
        const name = byCui.get(c.cui ?? '');
        if (name !== undefined) expect(c.preferred_name).toBe(name);
        byCui.set(c.cui ?? '', c.preferred_name ?? '');
        expect(c.ccsr_categories?.length).toBeGreaterThan(0);
        for (const code of c.ccsr_categories ?? []) {
          expect(tables.isCategory(code)).toBe(true);
          expect(c.ccsr_body_systems).toContain(code.slice(0, 3));
        }
        for (const system of c.ccsr_body_systems ?? [])
          expect(tables.bodySystem(system)).toBeDefined();
      }
    }
    expect(new Set(byCui.values()).size).toBe(byCui.size);
  });
});
