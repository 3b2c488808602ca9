import type { AssembledPatient } from '../interface/assembled-patient.ts';
import { ConcordanceError } from '../errors/concordance-error.ts';
import { ageAt, daysBefore, genderOf } from './assemble-patient.ts';
import type { ClinicalItem, ClinicalRecord } from './clinical-record.ts';
import { DEMOGRAPHIC_TERMS } from './demographic-terms.ts';
import { assertNoIdentifiers } from './prepare-for-service.ts';
import * as codes from './prevent-codes.ts';

/**
 * The record holds nothing Prevent can use (no biomarker, no history item): nothing is sent, and
 * the run ends `rejected`.
 */
export class PreventNoDataError extends ConcordanceError {
  static readonly code = 'ERR_PREVENT_NO_DATA';
  readonly code = PreventNoDataError.code;

  constructor() {
    super('the record holds no biomarker and no history item Prevent can use; not sent');
  }
}

/** A code with its system (FHIR Coding, without its display: never free text). */
export interface Code {
  system: string;
  code: string;
}

/** A FHIR Quantity: a value in a UCUM unit. */
export interface Quantity {
  value: number;
  unit: string;
  system: typeof codes.UCUM;
  code: string;
}

/** One coded measurement or answer as sent: a FHIR Observation's `code` and `value[x]`. */
export interface PreventEntry {
  code: Code;
  valueQuantity?: Quantity;
  valueCoding?: Code;
  valueBoolean?: boolean;
}

/** The three objects of the Prevent request body besides `patient_service_id` (section 2). */
export interface PreventPayload {
  /** Biomarker name (prevent-codes.ts `BIOMARKERS`) to its newest value, in its own unit. */
  patient_biomarkers: Record<string, PreventEntry>;
  patient_history: {
    smoking_status?: PreventEntry & { status: string };
    alcohol?: Record<string, PreventEntry>;
    physical_activity?: Record<string, PreventEntry & { derived_from?: Code[] }>;
    family_history?: { relationship?: Code; conditions: Code[] }[];
    questionnaire_answers?: { question: Code; answer: Omit<PreventEntry, 'code'> }[];
  };
  patient_demographics: { age: number; gender: string };
}

/** One coded fact of the record (an observation, a component, an answer), newest last. */
interface Fact {
  /** The LOINC code. */
  code: string;
  value: number | string | undefined;
  unit: string | undefined;
  valueCoding: Code | undefined;
  /** Days before now (smaller is newer); undefined when the record gives no date. */
  daysAgo: number | undefined;
  /** Where it came from, to keep the order stable when two facts share a date. */
  order: string;
}

/** What the builder reads, from either form of record. */
interface Facts {
  /** Observations and their components. */
  observed: Fact[];
  /** Questionnaire answers. */
  answered: Fact[];
  family: ClinicalItem[];
  demographics: PreventPayload['patient_demographics'];
}

/** At most this many family-history entries and questionnaire answers are sent. */
const MAX_FAMILY = 50;
const MAX_ANSWERS = 200;

const live = (item: ClinicalItem) =>
  item.status?.trim().toLowerCase() !== 'entered-in-error' && item.status !== 'cancelled';

const loincCodes = (codings: readonly { system: string; code: string }[]) =>
  codings.filter((c) => c.system.trim() === codes.LOINC).map((c) => c.code.trim());

/** The facts of a clinical record (the feeds' record). */
function clinicalFacts(record: ClinicalRecord, now: Date): Facts {
  const observed: Fact[] = [];
  const answered: Fact[] = [];
  const family: ClinicalItem[] = [];
  const items = Object.values(record.items)
    .filter(live)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const item of items) {
    if (item.kind === 'family_history') family.push(item);
    if (item.kind !== 'observation' && item.kind !== 'questionnaire') continue;
    const into = item.kind === 'questionnaire' ? answered : observed;
    const daysAgo = daysBefore(item.effectiveAt, now);
    // An observation's own value and its components' (a blood pressure panel), or the answers.
    [item, ...(item.components ?? [])].forEach((part, i) => {
      for (const code of loincCodes(part.codings)) {
        into.push({
          code,
          value: part.value,
          unit: part.unitCode ?? part.unit,
          valueCoding: part.valueCoding,
          daysAgo,
          order: `${item.key}#${i}`,
        });
      }
    });
  }
  return {
    observed,
    answered,
    family,
    demographics: {
      age: ageAt(record.patient.birthDate, now),
      gender: genderOf(record.patient.gender),
    },
  };
}

/** The facts of an AssembledPatient sent as JSON: its observation nodes and demographics. */
function assembledFacts(record: AssembledPatient): Facts {
  const observed: Fact[] = [];
  record.nodes.forEach((node, i) => {
    if (node.node_type !== 'observation') return;
    const metadata = node.metadata ?? {};
    const value = metadata.value;
    const unit = metadata.unit;
    const days = metadata.days_before_assembly;
    for (const code of loincCodes(node.coding)) {
      observed.push({
        code,
        value: typeof value === 'number' || typeof value === 'string' ? value : undefined,
        unit: typeof unit === 'string' ? unit : undefined,
        valueCoding: undefined,
        daysAgo: typeof days === 'number' ? days : undefined,
        order: String(i).padStart(6, '0'),
      });
    }
  });
  return {
    observed,
    answered: [],
    family: [],
    demographics: {
      age: record.demographics.age,
      gender: genderOf(record.demographics.gender),
    },
  };
}

/** Newer first: a known date before an unknown one, then the later place in the record. */
const newestFirst = (a: Fact, b: Fact) =>
  (a.daysAgo ?? Number.POSITIVE_INFINITY) - (b.daysAgo ?? Number.POSITIVE_INFINITY) ||
  (a.order < b.order ? 1 : a.order > b.order ? -1 : 0);

/** The newest fact with one of `codes` that `accept` takes, and what it made of it. */
function newest<T>(
  facts: readonly Fact[],
  codes: readonly string[],
  accept: (fact: Fact) => T | undefined,
): T | undefined {
  for (const fact of facts.filter((f) => codes.includes(f.code)).sort(newestFirst)) {
    const made = accept(fact);
    if (made !== undefined) return made;
  }
  return undefined;
}

const numberOf = (fact: Fact): number | undefined => {
  const value = typeof fact.value === 'string' ? Number(fact.value.trim()) : fact.value;
  return typeof value === 'number' && Number.isFinite(value) && fact.value !== ''
    ? value
    : undefined;
};

/** Two decimals at most: enough for every biomarker, and no needless precision. */
const rounded = (value: number) => Math.round(value * 100) / 100;

const quantity = (value: number, unit: string): Quantity => ({
  value: rounded(value),
  unit,
  system: codes.UCUM,
  code: unit,
});

/**
 * A biomarker's newest value in its own unit: converted when it came in another known unit; left
 * out when its unit is missing or unknown (never guessed). A converted value names the
 * biomarker's first LOINC code, whose property matches the unit it is sent in.
 */
function biomarkerEntry(marker: codes.Biomarker, fact: Fact): PreventEntry | undefined {
  const value = numberOf(fact);
  const unit = codes.ucumOf(fact.unit);
  if (value === undefined || unit === undefined) return undefined;
  if (unit === marker.unit) {
    return { code: { system: codes.LOINC, code: fact.code }, valueQuantity: quantity(value, unit) };
  }
  const convert = marker.from?.[unit];
  if (convert === undefined) return undefined;
  return {
    code: { system: codes.LOINC, code: marker.codes[0] ?? fact.code },
    valueQuantity: quantity(convert(value), marker.unit),
  };
}

function biomarkers(facts: readonly Fact[]): PreventPayload['patient_biomarkers'] {
  const out: PreventPayload['patient_biomarkers'] = {};
  for (const marker of codes.BIOMARKERS) {
    const entry = newest(facts, marker.codes, (fact) => biomarkerEntry(marker, fact));
    if (entry !== undefined) out[marker.name] = entry;
  }
  return out;
}

/** The answer of a smoking status: its coding (system inferred for a bare code) and status. */
function smokingEntry(
  fact: Fact,
): NonNullable<PreventPayload['patient_history']['smoking_status']> {
  const code = fact.valueCoding?.code ?? (typeof fact.value === 'string' ? fact.value : undefined);
  const known = code === undefined ? undefined : codes.SMOKING_ANSWERS[code.trim()];
  const valueCoding =
    fact.valueCoding ??
    (known === undefined || code === undefined
      ? undefined
      : { system: known.system, code: code.trim() });
  return {
    code: { system: codes.LOINC, code: codes.SMOKING_STATUS },
    ...(valueCoding === undefined ? {} : { valueCoding }),
    status: known?.status ?? 'unknown',
  };
}

/** A count or score whose unit its LOINC code fixes. */
function countedEntry(item: codes.CountedItem, value: number): PreventEntry {
  return {
    code: { system: codes.LOINC, code: item.code },
    valueQuantity: quantity(value, item.unit),
  };
}

function counted(
  facts: readonly Fact[],
  items: readonly codes.CountedItem[],
): Record<string, PreventEntry> {
  const out: Record<string, PreventEntry> = {};
  for (const item of items) {
    const value = newest(facts, [item.code], numberOf);
    if (value !== undefined && value >= 0) out[item.name] = countedEntry(item, value);
  }
  return out;
}

function physicalActivity(
  facts: readonly Fact[],
): NonNullable<PreventPayload['patient_history']['physical_activity']> {
  const out: NonNullable<PreventPayload['patient_history']['physical_activity']> = counted(
    facts,
    codes.ACTIVITY,
  );
  const days = out.active_days_per_week?.valueQuantity?.value;
  const minutes = out.active_minutes_per_day?.valueQuantity?.value;
  const weekly = codes.ACTIVITY.find((item) => item.code === codes.MINUTES_PER_WEEK);
  if (out.active_minutes_per_week === undefined && weekly !== undefined) {
    if (days !== undefined && minutes !== undefined) {
      out.active_minutes_per_week = {
        ...countedEntry(weekly, days * minutes),
        derived_from: [
          { system: codes.LOINC, code: codes.DAYS_PER_WEEK },
          { system: codes.LOINC, code: codes.MINUTES_PER_DAY },
        ],
      };
    }
  }
  return out;
}

/** A code's system and code, trimmed; undefined when either is empty. */
function codeOf(coding: { system: string; code: string } | undefined): Code | undefined {
  const system = coding?.system.trim();
  const code = coding?.code.trim();
  return system && code ? { system, code } : undefined;
}

function familyHistory(
  items: readonly ClinicalItem[],
): NonNullable<PreventPayload['patient_history']['family_history']> {
  return items.slice(0, MAX_FAMILY).map((item) => {
    const relationship = codeOf(item.relationship);
    const seen = new Set<string>();
    const conditions = item.codings.flatMap((coding) => {
      const code = codeOf(coding);
      const key = code === undefined ? '' : `${code.system}|${code.code}`;
      if (code === undefined || seen.has(key)) return [];
      seen.add(key);
      return [code];
    });
    return relationship === undefined ? { conditions } : { relationship, conditions };
  });
}

/** A questionnaire answer's value as sent: a code, a boolean, or a number (an age capped at 90). */
function answerOf(fact: Fact): Omit<PreventEntry, 'code'> | undefined {
  const coding = codeOf(fact.valueCoding);
  if (coding !== undefined) return { valueCoding: coding };
  if (fact.value === 'true' || fact.value === 'false')
    return { valueBoolean: fact.value === 'true' };
  const value = numberOf(fact);
  if (value === undefined) return undefined;
  const capped = codes.AGE_QUESTIONS.has(fact.code) && value > codes.MAX_EXACT_AGE ? 90 : value;
  const unit = codes.ucumOf(fact.unit) ?? (codes.AGE_QUESTIONS.has(fact.code) ? 'a' : '1');
  return { valueQuantity: quantity(capped, unit) };
}

function questionnaireAnswers(
  facts: readonly Fact[],
): NonNullable<PreventPayload['patient_history']['questionnaire_answers']> {
  const seen = new Set<string>();
  const out: NonNullable<PreventPayload['patient_history']['questionnaire_answers']> = [];
  for (const fact of [...facts].sort(newestFirst)) {
    const answer = answerOf(fact);
    if (answer === undefined) continue;
    const key = JSON.stringify([fact.code, answer]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ question: { system: codes.LOINC, code: fact.code }, answer });
    if (out.length >= MAX_ANSWERS) break;
  }
  return out;
}

/** The record's history: each section only when the record has something for it. */
function history(facts: Facts): PreventPayload['patient_history'] {
  // Questionnaire answers count as observations of their question (a smoking status asked on a
  // form), after the observations themselves.
  const all = [...facts.observed, ...facts.answered];
  const out: PreventPayload['patient_history'] = {};
  const smoking = newest(all, [codes.SMOKING_STATUS], (fact) => {
    const entry = smokingEntry(fact);
    return entry.valueCoding === undefined ? undefined : entry;
  });
  if (smoking !== undefined) out.smoking_status = smoking;
  const alcohol = counted(all, codes.ALCOHOL);
  if (Object.keys(alcohol).length > 0) out.alcohol = alcohol;
  const activity = physicalActivity(all);
  if (Object.keys(activity).length > 0) out.physical_activity = activity;
  const family = familyHistory(facts.family);
  if (family.length > 0) out.family_history = family;
  const answers = questionnaireAnswers(facts.answered);
  if (answers.length > 0) out.questionnaire_answers = answers;
  return out;
}

export interface PreventPayloadOptions {
  /** The moment of the run: ages and recency are counted up to it. */
  now: Date;
  /** The hospital's own patient id: it must not appear anywhere in the payload. */
  localId: string;
  /** The patient's names, identifiers, birth date forms… (see `knownIdentifiers`). */
  knownIdentifiers?: readonly string[];
}

/** Gender terms (`female`) are not the patient's: a surname such as Male must not refuse them. */
const demographicTerm = (path: readonly string[], text: string) =>
  path.length === 2 &&
  path[0] === 'patient_demographics' &&
  path[1] === 'gender' &&
  DEMOGRAPHIC_TERMS.has(text);

/**
 * The de-identified objects of a Prevent request (interface section 2), built from the stored
 * record (a JSON AssembledPatient takes precedence, as for the concordance queries; otherwise the
 * feeds' clinical record):
 *
 * - `patient_biomarkers`: the newest value of each biomarker of `BIOMARKERS` (prevent-codes.ts),
 *   as a FHIR Observation's `code` (LOINC) and `valueQuantity` in the biomarker's UCUM unit
 *   (converted from another known unit; left out when the unit is missing or unknown). Blood
 *   pressure panels give their systolic and diastolic components.
 * - `patient_history`: the newest smoking status (LOINC 72166-2, with its SNOMED CT or LOINC answer
 *   and `status` current, former, never or unknown), alcohol (drinks per day, AUDIT-C score),
 *   physical activity (Exercise Vital Sign: minutes per week, derived from days per week times
 *   minutes per day when not given), family history (the relative's RoleCode and their conditions'
 *   codes) and the coded answers of questionnaires (LOINC question, coded, boolean or numeric
 *   answer; a relative's age over 89 sent as 90).
 * - `patient_demographics`: `age` in whole years (90 for anyone older than 89) and `gender` as the
 *   assembled record names it.
 *
 * Never sent: names, identifiers, dates (only ages), displays and any other text of the record.
 * A last check refuses a payload that holds the local id or a known identifier.
 *
 * @throws RecordNotAssemblableError when the clinical record has no usable birth date.
 * @throws PreventNoDataError when there is no biomarker and no history item.
 * @throws IdentifierLeakError when an identifier of the patient is found in the payload.
 */
export function buildPreventPayload(
  record: { assembled: AssembledPatient } | { clinical: ClinicalRecord },
  options: PreventPayloadOptions,
): PreventPayload {
  const facts =
    'assembled' in record
      ? assembledFacts(record.assembled)
      : clinicalFacts(record.clinical, options.now);
  const payload: PreventPayload = {
    patient_biomarkers: biomarkers(facts.observed),
    patient_history: history(facts),
    patient_demographics: facts.demographics,
  };
  if (
    Object.keys(payload.patient_biomarkers).length === 0 &&
    Object.keys(payload.patient_history).length === 0
  ) {
    throw new PreventNoDataError();
  }
  assertNoIdentifiers(payload, options, demographicTerm);
  return payload;
}
