import type { PreventRequest } from '../../interface/prevent.ts';
import { DISCLAIMER } from '../concordance/render-concordance.ts';
import type { RelationshipGraph } from '../relationships/relationship-graph.ts';
import { hash32 } from '../seeded-random.ts';

/** A value found in the request that raised a factor's priority. */
export interface PreventSignal {
  source: string;
  value: number | boolean | string;
}

export interface PreventRecommendation {
  rank: number;
  factor: string;
  description: string;
  relationship_ids: string[];
  evidence: {
    signals: PreventSignal[];
    num_studies: number;
    median_effect_size: number | null;
    simulated: true;
  };
}

export interface PreventResponseBody {
  patient_service_id: string;
  simulated: true;
  disclaimer: string;
  recommendations: PreventRecommendation[];
}

interface Factor {
  name: string;
  description: string;
  /** Lower-case key fragments that name a relevant value, and when the value counts as a risk. */
  keys: readonly string[];
  risky: (value: number | boolean | string) => boolean;
}

const above = (limit: number) => (v: number | boolean | string) =>
  typeof v === 'number' && v >= limit;
const below = (limit: number) => (v: number | boolean | string) =>
  typeof v === 'number' && v < limit;
const yes = (v: number | boolean | string) =>
  v === true || (typeof v === 'string' && /^(yes|current|daily|true)$/i.test(v));

const FACTORS: readonly Factor[] = [
  {
    name: 'weight',
    description: 'Work towards a healthy body weight (simulated).',
    keys: ['bmi'],
    risky: above(25),
  },
  {
    name: 'blood_pressure',
    description: 'Lower blood pressure through diet and activity (simulated).',
    keys: ['systolic'],
    risky: above(130),
  },
  {
    name: 'blood_glucose',
    description: 'Reduce refined carbohydrate intake to lower blood glucose (simulated).',
    keys: ['hba1c', 'glucose'],
    risky: above(5.7),
  },
  {
    name: 'cholesterol',
    description: 'Adopt a diet lower in saturated fat (simulated).',
    keys: ['ldl', 'cholesterol'],
    risky: above(130),
  },
  {
    name: 'smoking',
    description: 'Stop smoking, with counselling support (simulated).',
    keys: ['smok', 'tobacco'],
    risky: yes,
  },
  {
    name: 'alcohol',
    description: 'Keep alcohol within low-risk limits (simulated).',
    keys: ['alcohol', 'drinks'],
    risky: above(8),
  },
  {
    name: 'physical_activity',
    description: 'Reach 150 minutes of moderate activity a week (simulated).',
    keys: ['exercise', 'activity_minutes', 'active_minutes'],
    risky: below(150),
  },
  {
    name: 'sleep',
    description: 'Aim for seven or more hours of sleep (simulated).',
    keys: ['sleep'],
    risky: below(7),
  },
];

/** At most this many recommendations are returned. */
const MAX_RECOMMENDATIONS = 5;

/** Every scalar of the three input objects, with its dotted path. */
function scalars(request: PreventRequest): PreventSignal[] {
  const out: PreventSignal[] = [];
  const walk = (value: unknown, path: string, depth: number) => {
    if (depth > 6) return;
    if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string') {
      out.push({ source: path, value });
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, `${path}.${k}`, depth + 1);
    }
  };
  walk(request.patient_biomarkers, 'patient_biomarkers', 0);
  walk(request.patient_history, 'patient_history', 0);
  return out;
}

/**
 * Ranks the lifestyle factors for one patient, deterministically from the request: a factor
 * scores high when a value under a matching key is in its risk range, and a stable hash of the
 * request breaks the rest. Each factor cites existing graph relationships chosen by hash.
 */
export function preventRecommendations(
  request: PreventRequest,
  graph: RelationshipGraph,
): PreventResponseBody {
  const values = scalars(request);
  const fingerprint = JSON.stringify([request.patient_biomarkers, request.patient_history]);
  const scored = FACTORS.map((factor) => {
    const signals = values.filter(
      (s) => factor.keys.some((k) => s.source.toLowerCase().includes(k)) && factor.risky(s.value),
    );
    const tiebreak = hash32(`${factor.name}:${fingerprint}`) / 0x1_0000_0000;
    return { factor, signals, score: signals.length * 10 + tiebreak };
  }).sort((a, b) => b.score - a.score);

  const all = graph.relationships;
  const recommendations = scored.slice(0, MAX_RECOMMENDATIONS).map(({ factor, signals }, i) => {
    const h = hash32(`prevent:${factor.name}`);
    const cited =
      all.length === 0 ? [] : [...new Set([0, 1, 2].map((k) => all[(h + k * 7919) % all.length]))];
    const related = cited.filter((r) => r !== undefined);
    const effects = related.flatMap((r) => r.metadata?.median_effect_size ?? []);
    return {
      rank: i + 1,
      factor: factor.name,
      description: factor.description,
      relationship_ids: related.map((r) => r.relationship_id),
      evidence: {
        signals,
        num_studies: related.reduce((sum, r) => sum + (r.metadata?.num_studies ?? 0), 0),
        median_effect_size:
          effects.length === 0
            ? null
            : Math.round((effects.reduce((a, b) => a + b, 0) / effects.length) * 1000) / 1000,
        simulated: true as const,
      },
    };
  });
  return {
    patient_service_id: request.patient_service_id,
    simulated: true,
    disclaimer: DISCLAIMER,
    recommendations,
  };
}
