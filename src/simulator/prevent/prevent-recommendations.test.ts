import { describe, expect, it } from 'vitest';
import { loadCcsrTables } from '../../ccsr/ccsr-tables.ts';
import { buildRelationshipGraph } from '../relationships/relationship-graph.ts';
import { preventRecommendations } from './prevent-recommendations.ts';

const graph = buildRelationshipGraph(1, 500, loadCcsrTables());
const request = {
  patient_service_id: 'p1',
  patient_biomarkers: { bmi: 32.5, blood_pressure: { systolic: 150, diastolic: 95 } },
  patient_history: { smoking_status: 'current', sleep_hours: 8 },
  patient_demographics: { age: 52 },
};

describe('preventRecommendations', () => {
  const result = preventRecommendations(request, graph);

  it('ranks the factors the values point at first', () => {
    expect(result.patient_service_id).toBe('p1');
    expect(result.simulated).toBe(true);
    expect(result.recommendations.map((r) => r.rank)).toEqual([1, 2, 3, 4, 5]);
    expect(
      result.recommendations
        .slice(0, 3)
        .map((r) => r.factor)
        .sort(),
    ).toEqual(['blood_pressure', 'smoking', 'weight']);
    const weight = result.recommendations.find((r) => r.factor === 'weight');
    expect(weight?.evidence.signals).toEqual([{ source: 'patient_biomarkers.bmi', value: 32.5 }]);
    // Eight hours of sleep is fine: sleep must not be pushed up.
    expect(
      result.recommendations.find((r) => r.factor === 'sleep')?.evidence.signals ?? [],
    ).toEqual([]);
  });

  it('cites relationships that exist in the graph', () => {
    for (const r of result.recommendations) {
      expect(r.relationship_ids.length).toBeGreaterThan(0);
      for (const id of r.relationship_ids) expect(graph.get(id)).toBeDefined();
      expect(Number.isInteger(r.evidence.num_studies)).toBe(true);
    }
  });

  it('is deterministic', () => {
    expect(preventRecommendations(request, graph)).toEqual(result);
  });
});
