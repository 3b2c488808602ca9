import { describe, expect, it } from 'vitest';
import { buildCard, SUMMARY_MAX } from './build-card.ts';
import type { KeptResult } from './kept-result.ts';
import { readVerdict } from './result-verdict.ts';

const result = (
  concordance: Record<string, unknown>,
  over: Partial<KeptResult> = {},
): KeptResult => ({
  id: '4e0a3a1e-3283-4575-ab82-028d55fe2719',
  type: 'concordance.completed',
  created_at: '2026-11-02T08:00:00.000Z',
  record_version: 1,
  ccsr_category: 'END002',
  concordance,
  prevent: null,
  ...over,
});
const source = { label: 'Guideline concordance' };

describe('readVerdict', () => {
  it('takes the service’s own indicator first', () => {
    expect(readVerdict(result({ indicator: 'critical', verdict: 'concordant' })).indicator).toBe(
      'critical',
    );
  });
  it('then the overall verdict, then the recommendations’, then the flags', () => {
    expect(readVerdict(result({ verdict: 'discordant' }))).toMatchObject({
      verdict: 'discordant',
      indicator: 'warning',
    });
    const recs = (...v: string[]) => v.map((verdict) => ({ verdict }));
    expect(
      readVerdict(result({ recommendations: recs('concordant', 'discordant') })),
    ).toMatchObject({ verdict: 'discordant', indicator: 'warning' });
    expect(
      readVerdict(result({ recommendations: recs('concordant', 'concordant') })),
    ).toMatchObject({ verdict: 'concordant', indicator: 'info' });
    expect(readVerdict(result({ flags: ['discordance_found'] })).verdict).toBe('discordant');
  });
  it('falls back to unknown and info', () => {
    expect(readVerdict(result({}))).toMatchObject({ verdict: 'unknown', indicator: 'info' });
    expect(readVerdict(result({ indicator: 'loud', verdict: 42 }))).toMatchObject({
      verdict: 'unknown',
      indicator: 'info',
    });
  });
});

describe('buildCard', () => {
  it('makes a card: uuid, summary under 140, indicator, detail from the synthesis, source and topic', () => {
    const card = buildCard(
      result({
        summary: 'Synthesis *bold* [link](https://x.invalid)',
        recommendations: [
          { title: 'Monitor HbA1c', verdict: 'discordant', rationale: 'No HbA1c in a year.' },
          { title: 'Diagnosis documented', verdict: 'concordant' },
        ],
      }),
      { label: 'Src', url: 'https://example.org' },
      () => 'Diabetes mellitus without complication',
    );
    expect(card).toMatchObject({
      uuid: '4e0a3a1e-3283-4575-ab82-028d55fe2719',
      indicator: 'warning',
      source: {
        label: 'Src',
        url: 'https://example.org',
        topic: { code: 'END002', display: 'Diabetes mellitus without complication' },
      },
    });
    expect(card.summary).toBe(
      'Diabetes mellitus without complication (END002): 1 of 2 guideline recommendations not met',
    );
    // The result's words are shown as text: no markup or link of theirs gets through.
    expect(card.detail).toContain('Synthesis \\*bold\\* \\[link\\]\\(https://x.invalid\\)');
    expect(card.detail).toContain('- **Monitor HbA1c** (discordant): No HbA1c in a year.');
    expect(card.detail).toContain('_Result of 2026-11-02T08:00:00.000Z._');
  });

  it('cuts a long summary and names a category it cannot describe by its code', () => {
    const card = buildCard(result({ card_summary: 'x'.repeat(500) }), source);
    expect(card.summary.length).toBeLessThanOrEqual(SUMMARY_MAX);
    expect(card.summary.endsWith('…')).toBe(true);
    expect(buildCard(result({}), source).summary).toBe(
      'END002 (END002): guideline concordance result',
    );
  });

  it('makes a Prevent card from its recommendations, without a topic', () => {
    const card = buildCard(
      result(
        {},
        {
          type: 'prevent.completed',
          ccsr_category: 'prevent',
          concordance: null,
          prevent: { recommendations: [{ description: 'Stop smoking' }, { factor: 'weight' }] },
        },
      ),
      source,
    );
    expect(card.summary).toBe('Prevent: 2 healthy-behaviour recommendations');
    expect(card.indicator).toBe('info');
    expect(card.detail).toContain('- Stop smoking');
    expect(card.source).toEqual({ label: 'Guideline concordance' });
  });
});
