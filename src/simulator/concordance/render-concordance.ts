import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import { hash32 } from '../seeded-random.ts';
import {
  RECOMMENDATION_KINDS,
  type ConcordanceOutline,
  type RecommendationKind,
  type Verdict,
} from './concordance-outline.ts';

export const DISCLAIMER = 'Simulated by the local Clinical Graph Service; not medical advice.';

const STRENGTHS = ['strong', 'moderate', 'weak', 'conditional'] as const;

export interface SimulatedRecommendation {
  title: string;
  issuing_body: string;
  year: number;
  strength: (typeof STRENGTHS)[number];
  verdict: Verdict;
  evidence_node_ids: string[];
  rationale: string;
}

export interface SimulatedReference {
  title: string;
  authors: string[];
  journal: string;
  year: number;
  doi: string;
}

/** The concordance object of a completed job (the interface leaves it open). */
export interface SimulatedConcordance {
  simulated: true;
  disclaimer: string;
  ccsr_category: string;
  ccsr_category_description: string;
  ccsr_body_system: string;
  ccsr_body_system_description: string;
  summary: string;
  recommendations: SimulatedRecommendation[];
  references: SimulatedReference[];
  flags: string[];
}

const TOPIC: Record<RecommendationKind, string> = {
  diagnosis: 'documentation and staging',
  monitoring: 'regular monitoring',
  management: 'guideline-directed management',
};

const RATIONALE: Record<RecommendationKind, Record<Verdict, string>> = {
  diagnosis: {
    concordant: 'The record lists a condition matching this category.',
    discordant: 'The record does not document this condition.',
    insufficient_data: 'No node of the record matches this category.',
  },
  monitoring: {
    concordant: 'The record holds observations linked to the matching condition.',
    discordant: 'The matching condition has no linked observation in the record.',
    insufficient_data: 'No node of the record matches this category.',
  },
  management: {
    concordant: 'The record holds interventions linked to the matching condition.',
    discordant: 'The matching condition has no linked intervention in the record.',
    insufficient_data: 'No node of the record matches this category.',
  },
};

/** Builds the full concordance object from a job's outline; every word of it is synthetic. */
export function renderConcordance(
  outline: ConcordanceOutline,
  tables: CcsrTables,
): SimulatedConcordance {
  const category = tables.category(outline.category);
  if (category === undefined) throw new Error(`unknown CCSR category ${outline.category}`);
  const description = category.description;
  const count = outline.verdicts.length;
  const recommendations = outline.verdicts.map(({ verdict, nodeIds }, i) => {
    const kind = RECOMMENDATION_KINDS[i] ?? 'management';
    const h = hash32(`${category.code}:${i}`);
    return {
      title: `Simulated guideline for ${description} (${i + 1} of ${count}): ${TOPIC[kind]}`,
      issuing_body: 'Simulated Guideline Panel (local simulator)',
      year: 2016 + (h % 8),
      strength: STRENGTHS[(h >>> 8) % STRENGTHS.length] ?? 'moderate',
      verdict,
      evidence_node_ids: [...nodeIds],
      rationale: RATIONALE[kind][verdict],
    };
  });
  const references = recommendations.map((r, i) => ({
    title: `Simulated evidence review for ${description} (${i + 1} of ${count})`,
    authors: ['Simulator, A.', 'Simulator, B.'],
    journal: 'Simulated Journal of Clinical Evidence',
    year: r.year - 1,
    // 10.5555 is the test prefix Crossref reserves: no real article has such a DOI.
    doi: `10.5555/simulated.${category.code.toLowerCase()}.${i + 1}`,
  }));
  const tally = (v: Verdict) => recommendations.filter((r) => r.verdict === v).length;
  return {
    simulated: true,
    disclaimer: DISCLAIMER,
    ccsr_category: category.code,
    ccsr_category_description: description,
    ccsr_body_system: category.bodySystem,
    ccsr_body_system_description: tables.bodySystem(category.bodySystem)?.description ?? '',
    summary:
      `Simulated synthesis for ${description} (${category.code}): ` +
      `${tally('concordant')} of ${count} recommendations concordant with the record, ` +
      `${tally('discordant')} discordant, ${tally('insufficient_data')} with insufficient data.`,
    recommendations,
    references,
    flags: [...outline.flags],
  };
}
