import { describe, expect, it } from 'vitest';
import { loadCcsrTables } from '../../ccsr/ccsr-tables.ts';
import { DISCLAIMER, renderConcordance } from './render-concordance.ts';

const tables = loadCcsrTables();

describe('renderConcordance', () => {
  const outline = {
    category: 'END002',
    verdicts: [
      { verdict: 'concordant' as const, nodeIds: ['a'] },
      { verdict: 'discordant' as const, nodeIds: ['a'] },
      { verdict: 'insufficient_data' as const, nodeIds: [] },
    ],
    flags: ['discordance_found' as const],
  };
  const result = renderConcordance(outline, tables);

  it('is plainly simulated and names the category and its body system', () => {
    expect(result).toMatchObject({
      simulated: true,
      disclaimer: DISCLAIMER,
      ccsr_category: 'END002',
      ccsr_category_description: tables.category('END002')?.description,
      ccsr_body_system: 'END',
      ccsr_body_system_description: tables.bodySystem('END')?.description,
      flags: ['discordance_found'],
    });
    expect(result.summary).toContain('1 of 3 recommendations concordant');
  });

  it('lists one synthetic recommendation and reference per verdict', () => {
    expect(result.recommendations.map((r) => r.verdict)).toEqual([
      'concordant',
      'discordant',
      'insufficient_data',
    ]);
    expect(result.recommendations.map((r) => r.evidence_node_ids)).toEqual([['a'], ['a'], []]);
    for (const [i, r] of result.recommendations.entries()) {
      expect(r.title).toMatch(new RegExp(`^Simulated guideline for .+ \\(${i + 1} of 3\\)`));
      expect(r.issuing_body).toMatch(/Simulated/);
      expect(Number.isInteger(r.year)).toBe(true);
      expect(['strong', 'moderate', 'weak', 'conditional']).toContain(r.strength);
    }
    expect(result.references).toHaveLength(3);
    for (const ref of result.references) {
      expect(ref.title).toMatch(/^Simulated/);
      expect(ref.doi).toMatch(/^10\.5555\/simulated\./);
      expect(ref.authors.length).toBeGreaterThan(0);
    }
  });

  it('renders the same object every time', () => {
    expect(renderConcordance(outline, tables)).toEqual(result);
  });

  it('refuses an unknown category', () => {
    expect(() => renderConcordance({ ...outline, category: 'XXX000' }, tables)).toThrow(
      /unknown CCSR/,
    );
  });
});
