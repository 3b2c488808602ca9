import type { AssembleNode, AssembledPatient } from '../../interface/assembled-patient.ts';
import type { CcsrCategory } from '../../ccsr/ccsr-tables.ts';
import { isIcd10CmSystem } from '../../ccsr/code-systems.ts';
import { ccsrCategoriesForIcd10 } from '../../ccsr/icd10-ccsr-map.ts';
import { hash32 } from '../seeded-random.ts';

export type Verdict = 'concordant' | 'discordant' | 'insufficient_data';

/** The simulated guideline recommendations of a category, in this order; 2 or 3 per category. */
export const RECOMMENDATION_KINDS = ['diagnosis', 'monitoring', 'management'] as const;
export type RecommendationKind = (typeof RECOMMENDATION_KINDS)[number];

export type ConcordanceFlag =
  'no_matching_nodes' | 'discordance_found' | 'notable_nodes_cited' | 'age_capped_at_90';

/**
 * Everything a completed job needs to render its result: the category code, one verdict and a
 * few node ids per recommendation, and the flags. Small on purpose (see the job store).
 */
export interface ConcordanceOutline {
  readonly category: string;
  readonly verdicts: readonly { verdict: Verdict; nodeIds: readonly string[] }[];
  readonly flags: readonly ConcordanceFlag[];
}

/** At most this many node ids are cited per recommendation. */
const MAX_CITED = 5;

/** How many recommendations a category has: 2 or 3, stable per category. */
export function recommendationCount(category: string): number {
  return 2 + (hash32(`count:${category}`) % 2);
}

/**
 * A node bears on the category when one of its codings carries the category code itself, or is
 * an ICD-10-CM code that the CCSR v2023.1 table maps to the category (any of its categories, not
 * only the default one: E11.9 bears on END002 and END005). Display texts and names play no part:
 * the worker does not send them.
 */
function matchesCategory(node: AssembleNode, category: CcsrCategory): boolean {
  return node.coding.some(
    (c) =>
      c.code.trim().toUpperCase() === category.code ||
      (isIcd10CmSystem(c.system) && ccsrCategoriesForIcd10(c.code, 'all').includes(category.code)),
  );
}

/**
 * Decides the verdicts, deterministically from the record and the category alone:
 * - diagnosis: concordant when a condition node matches the category, else insufficient_data;
 * - monitoring: needs a matching condition; concordant when an observation matches the category
 *   or is linked by an edge to a matching condition, else discordant citing the conditions;
 * - management: the same with intervention nodes.
 */
export function outlineConcordance(
  patient: AssembledPatient,
  category: CcsrCategory,
): ConcordanceOutline {
  const matching = patient.nodes.filter((n) => matchesCategory(n, category));
  const matchingIds = new Set(matching.map((n) => n.id));
  const conditions = matching.filter((n) => n.node_type === 'condition');
  const conditionIds = new Set(conditions.map((n) => n.id));
  const linked = new Set<string>();
  for (const edge of patient.relationships) {
    if (conditionIds.has(edge.source_id)) linked.add(edge.target_id);
    if (conditionIds.has(edge.target_id)) linked.add(edge.source_id);
  }
  const supporting = (type: AssembleNode['node_type']) =>
    patient.nodes.filter(
      (n) => n.node_type === type && (linked.has(n.id) || matchingIds.has(n.id)),
    );
  const ids = (nodes: AssembleNode[]) => nodes.slice(0, MAX_CITED).map((n) => n.id);

  const verdictFor = (kind: RecommendationKind) => {
    if (conditions.length === 0) return { verdict: 'insufficient_data' as const, nodeIds: [] };
    if (kind === 'diagnosis') return { verdict: 'concordant' as const, nodeIds: ids(conditions) };
    const found = supporting(kind === 'monitoring' ? 'observation' : 'intervention');
    return found.length > 0
      ? { verdict: 'concordant' as const, nodeIds: ids(found) }
      : { verdict: 'discordant' as const, nodeIds: ids(conditions) };
  };
  const verdicts = RECOMMENDATION_KINDS.slice(0, recommendationCount(category.code)).map(
    verdictFor,
  );

  const cited = new Set(verdicts.flatMap((v) => v.nodeIds));
  const flags: ConcordanceFlag[] = [];
  if (matching.length === 0) flags.push('no_matching_nodes');
  if (verdicts.some((v) => v.verdict === 'discordant')) flags.push('discordance_found');
  if (patient.nodes.some((n) => n.notable && cited.has(n.id))) flags.push('notable_nodes_cited');
  if (patient.demographics.age >= 90) flags.push('age_capped_at_90');
  return { category: category.code, verdicts, flags };
}
