/** SNOMED CT concepts the NLM map's rules test. */
export const RULE_CONCEPTS = {
  male: '248153007',
  female: '248152002',
  /** Age at onset of clinical finding (observable entity). */
  ageAtOnset: '445518008',
  /** Current chronological age (observable entity). */
  currentAge: '424144002',
} as const;

/** What a map rule may ask about the patient; anything unknown makes a condition false. */
export interface MapRuleContext {
  /** Age in years (fractional) at the problem's onset, or now when the onset is not known. */
  ageYears?: number | undefined;
  /** FHIR administrative gender, lower case. */
  gender?: string | undefined;
  /** SNOMED CT concepts of the patient's other active problems (`IFA <concept>` rules). */
  conditions?: ReadonlySet<string> | undefined;
}

const UNIT_YEARS: Record<string, number> = {
  years: 1,
  year: 1,
  months: 1 / 12,
  month: 1 / 12,
  days: 1 / 365.25,
  day: 1 / 365.25,
};

/** `IFA 445518008 | Age at onset of clinical finding (observable entity) | < 18.0 years` */
const CLAUSE = /^IFA\s+(\d{6,18})\s*\|[^|]*\|\s*(?:(<=|>=|<|>|=)\s*(\d+(?:\.\d+)?)\s*([a-z]+)?)?$/i;

function compare(left: number, op: string, right: number): boolean {
  switch (op) {
    case '<':
      return left < right;
    case '<=':
      return left <= right;
    case '>':
      return left > right;
    case '>=':
      return left >= right;
    default:
      return left === right;
  }
}

function clauseHolds(clause: string, context: MapRuleContext): boolean {
  const match = CLAUSE.exec(clause.trim());
  if (match === null) return false;
  const [, concept = '', op, value, unit] = match;
  if (concept === RULE_CONCEPTS.male) return context.gender === 'male';
  if (concept === RULE_CONCEPTS.female) return context.gender === 'female';
  if (concept === RULE_CONCEPTS.ageAtOnset || concept === RULE_CONCEPTS.currentAge) {
    if (op === undefined || value === undefined || context.ageYears === undefined) return false;
    const factor = UNIT_YEARS[(unit ?? 'years').toLowerCase()];
    if (factor === undefined) return false;
    return compare(context.ageYears, op, Number(value) * factor);
  }
  if (op !== undefined) return false;
  return context.conditions?.has(concept) ?? false;
}

/**
 * Whether a `mapRule` of the NLM SNOMED CT to ICD-10-CM map holds for the patient: `TRUE`,
 * `OTHERWISE TRUE` (the last rule of a group), or clauses joined by `AND`, each `IFA <concept> |
 * term |` with an optional comparison. Gender clauses test the patient's administrative gender,
 * age clauses (`445518008` age at onset, `424144002` current age) the age in years, and any other
 * concept whether the patient has that problem. A clause that cannot be decided (no age, no gender,
 * a syntax this reader does not know) is false, so the group falls through to its next rule and,
 * in the end, to `OTHERWISE TRUE`.
 */
export function mapRuleHolds(rule: string, context: MapRuleContext): boolean {
  const text = rule.trim();
  if (text === '' || /^(OTHERWISE\s+)?TRUE$/i.test(text)) return true;
  return text.split(/\s+AND\s+(?=IFA\s)/i).every((clause) => clauseHolds(clause, context));
}
