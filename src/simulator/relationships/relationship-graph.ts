import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import type { Concept, Relationship, RelationshipMetadata } from '../../interface/relationship.ts';
import { seededRandom, type Random } from '../seeded-random.ts';
import { CONCEPT_VOCABULARY } from './concept-vocabulary.ts';

/** The simulated clinical graph: relationships in id order plus an index by id. */
export interface RelationshipGraph {
  readonly relationships: readonly Relationship[];
  get(id: string): Relationship | undefined;
}

/**
 * Relationship ids are `rel-` and the 1-based position zero-padded to six digits
 * (`rel-000001` ... `rel-005000`; longer numbers beyond 999,999). Sorted as strings they keep
 * their generation order.
 */
export function relationshipId(position: number): string {
  return `rel-${String(position).padStart(6, '0')}`;
}

/** An odd multiplier that is not a multiple of 5 permutes 0..10^7-1, so CUIs never collide. */
const CUI_STRIDE = 7919;

function cui(index: number, offset: number): string {
  return `C${String((index * CUI_STRIDE + offset) % 10_000_000).padStart(7, '0')}`;
}

function buildConcepts(tables: CcsrTables, random: Random): Concept[] {
  const offset = random.int(0, 9_999_999);
  const concepts: Concept[] = tables.categories.map((category) => ({
    preferred_name: category.description,
    service_category: 'Condition',
    ccsr_body_systems: [category.bodySystem],
    ccsr_categories: [category.code],
  }));
  for (const [serviceCategory, names] of Object.entries(CONCEPT_VOCABULARY)) {
    for (const name of names) {
      // A non-condition concept bears on one or two categories, of one or two body systems.
      const related = [random.pick(tables.categories), random.pick(tables.categories)].slice(
        0,
        random.int(1, 2),
      );
      const categories = [...new Set(related.map((c) => c.code))];
      concepts.push({
        preferred_name: name,
        service_category: serviceCategory,
        ccsr_body_systems: [...new Set(related.map((c) => c.bodySystem))],
        ccsr_categories: categories,
      });
    }
  }
  return concepts.map((concept, i) => ({ cui: cui(i + 1, offset), ...concept }));
}

/** A count skewed towards small values: most relationships have few studies. */
function skewed(random: Random, max: number): number {
  return Math.max(1, Math.floor(Math.exp(random.next() * Math.log(max))));
}

const DAY_MS = 86_400_000;
const PUBLISHED_FROM = Date.UTC(2000, 0, 1);
const PUBLISHED_TO = Date.UTC(2023, 5, 30);
const UPDATED_TO = Date.UTC(2024, 0, 1);

function metadata(random: Random): RelationshipMetadata {
  const numStudies = skewed(random, 250);
  const numFindings = numStudies + random.int(0, numStudies * 3);
  const published =
    PUBLISHED_FROM + random.int(0, (PUBLISHED_TO - PUBLISHED_FROM) / DAY_MS) * DAY_MS;
  const updated = published + random.int(0, (UPDATED_TO - published) / DAY_MS) * DAY_MS;
  return {
    num_findings: numFindings,
    num_studies: numStudies,
    last_published_date: new Date(published).toISOString(),
    highest_cited: skewed(random, 20_000) - 1,
    highest_sample_size: 20 + skewed(random, 500_000),
    num_experimental_trials: random.int(0, numStudies),
    median_effect_size: Math.round((random.next() * 2 - 0.5) * 1000) / 1000,
    num_significant_findings: random.int(0, numFindings),
    last_updated: new Date(updated).toISOString(),
  };
}

/**
 * Builds `count` relationships from the seed alone. Most point from an intervention, biomarker or
 * risk factor to a condition or outcome; a few carry no metadata (it is optional).
 */
export function buildRelationshipGraph(
  seed: number,
  count: number,
  tables: CcsrTables,
): RelationshipGraph {
  const random = seededRandom(seed, 'graph');
  const concepts = buildConcepts(tables, random);
  const conditions = concepts.filter((c) => c.service_category === 'Condition');
  const others = concepts.filter((c) => c.service_category !== 'Condition');
  const relationships: Relationship[] = [];
  const byId = new Map<string, Relationship>();
  for (let i = 1; i <= count; i++) {
    const from = random.chance(0.8) ? random.pick(others) : random.pick(conditions);
    let to = random.chance(0.85) ? random.pick(conditions) : random.pick(others);
    if (to === from) to = random.pick(conditions.filter((c) => c !== from));
    const relationship: Relationship = {
      relationship_id: relationshipId(i),
      from_concept: from,
      to_concept: to,
    };
    if (!random.chance(0.03)) relationship.metadata = metadata(random);
    relationships.push(relationship);
    byId.set(relationship.relationship_id, relationship);
  }
  return { relationships, get: (id) => byId.get(id) };
}
