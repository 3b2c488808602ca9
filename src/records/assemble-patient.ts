import type {
  AssembleNode,
  AssembledPatient,
  Coding,
  NodeType,
} from '../interface/assembled-patient.ts';
import type { ClinicalItem, ClinicalRecord, ItemKind } from './clinical-record.ts';
import { DATE_LIKE, MAX_STRING_VALUE } from './short-value.ts';
import { ConcordanceError } from '../errors/concordance-error.ts';

/**
 * The record cannot be assembled: the service requires an age and the record has no usable birth
 * date. The message names the reason only, never the value.
 */
export class RecordNotAssemblableError extends ConcordanceError {
  static readonly code = 'ERR_RECORD_NOT_ASSEMBLABLE';
  readonly code = RecordNotAssemblableError.code;
  readonly reason: 'birth_date_missing' | 'birth_date_invalid' | 'birth_date_in_future';

  constructor(reason: RecordNotAssemblableError['reason']) {
    super(`the record cannot be assembled: ${reason.replaceAll('_', ' ')}; not sent`);
    this.name = 'RecordNotAssemblableError';
    this.reason = reason;
  }
}

export interface AssembleOptions {
  /** The moment of assembly: ages and `days_before_assembly` are counted up to it. */
  now: Date;
}

const DAY_MS = 86_400_000;

/** The node type of each kind; `null`: not the patient's own clinical fact, never a node. */
const NODE_TYPE: Record<ItemKind, NodeType | null> = {
  condition: 'condition',
  observation: 'observation',
  medication: 'intervention',
  procedure: 'intervention',
  care_plan: 'intervention',
  allergy: 'allergy',
  immunization: 'immunization',
  // A relative's conditions are not the patient's; questionnaire answers go to Prevent only.
  family_history: null,
  questionnaire: null,
};

/** Condition statuses that make a problem active (FHIR condition-clinical). */
const ACTIVE_STATUSES: ReadonlySet<string> = new Set(['active', 'recurrence', 'relapse']);

/** Interpretations that mean "not abnormal" (HL7 v2 table 0078 / FHIR v3 ObservationInterpretation). */
const NOT_ABNORMAL: ReadonlySet<string> = new Set(['', 'N', 'NORMAL', 'NEG', 'NEGATIVE']);

interface CalendarDay {
  year: number;
  month: number; // 1..12
  day: number; // 1..31
}

/** `YYYY`, `YYYY-MM`, `YYYY-MM-DD` (ISO) or `YYYYMMDD` (HL7 v2 DTM); a missing month/day is the 1st. */
function parseCalendarDay(text: string): CalendarDay | undefined {
  const match = /^(\d{4})(?:-?(\d{2})(?:-?(\d{2}))?)?$/.exec(text.trim().slice(0, 10));
  if (!match) return undefined;
  const year = Number(match[1]);
  const month = match[2] === undefined ? 1 : Number(match[2]);
  const day = match[3] === undefined ? 1 : Number(match[3]);
  const probe = new Date(Date.UTC(year, month - 1, day));
  if (probe.getUTCMonth() !== month - 1 || probe.getUTCDate() !== day) return undefined;
  return { year, month, day };
}

/** Whole days from `effectiveAt` to `now`; negative for a planned (future) date; undefined if unreadable. */
export function daysBefore(effectiveAt: string | undefined, now: Date): number | undefined {
  if (effectiveAt === undefined) return undefined;
  const text = effectiveAt.trim();
  // A datetime with a time part: elapsed whole days between the two instants.
  if (/^\d{4}-\d{2}-\d{2}T/.test(text)) {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    return Math.floor((now.getTime() - at) / DAY_MS);
  }
  // A date (or HL7 DTM): calendar days between that date and today's UTC date.
  const day = parseCalendarDay(text);
  if (!day) return undefined;
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Math.round((today - Date.UTC(day.year, day.month - 1, day.day)) / DAY_MS);
}

/** Whole years at `now` (UTC calendar date), birthdays respected; over 89 is sent as 90. */
export function ageAt(birthDate: string | undefined, now: Date): number {
  if (birthDate === undefined || birthDate.trim() === '') {
    throw new RecordNotAssemblableError('birth_date_missing');
  }
  const born = parseCalendarDay(birthDate);
  if (!born) throw new RecordNotAssemblableError('birth_date_invalid');
  const month = now.getUTCMonth() + 1;
  const day = now.getUTCDate();
  const hadBirthday = month > born.month || (month === born.month && day >= born.day);
  const age = now.getUTCFullYear() - born.year - (hadBirthday ? 0 : 1);
  if (age < 0) throw new RecordNotAssemblableError('birth_date_in_future');
  return age > 89 ? 90 : age;
}

const GENDERS: Record<string, string> = {
  m: 'male',
  male: 'male',
  f: 'female',
  female: 'female',
  o: 'other',
  other: 'other',
  a: 'other', // HL7 v2 table 0001 "ambiguous"
  u: 'unknown',
  unknown: 'unknown',
  n: 'unknown', // HL7 v2 table 0001 "not applicable"
};

/** The administrative gender as the assembled record names it (`unknown` when not given). */
export function genderOf(gender: string | undefined): string {
  return GENDERS[(gender ?? '').trim().toLowerCase()] ?? 'unknown';
}

function raceOf(race: readonly string[]): string {
  const first = race.map((r) => r.trim()).find((r) => r !== '');
  return first === undefined || first.length > MAX_STRING_VALUE ? 'unknown' : first;
}

function codingsOf(item: ClinicalItem): Coding[] {
  return item.codings
    .map((c) => ({ system: c.system.trim(), code: c.code.trim(), display: c.display?.trim() }))
    .filter((c) => c.system !== '' && c.code !== '')
    .map(({ system, code, display }) =>
      display === undefined || display === '' ? { system, code } : { system, code, display },
    );
}

function isNotable(item: ClinicalItem): boolean {
  if (item.kind === 'condition') {
    const status = item.status?.trim().toLowerCase();
    if (status === undefined || status === '') return item.problemList === true;
    return ACTIVE_STATUSES.has(status);
  }
  if (item.kind === 'observation') {
    if (item.interpretation === undefined) return false;
    return !NOT_ABNORMAL.has(item.interpretation.trim().toUpperCase());
  }
  return false;
}

/** A short, date-free string (codes, units, ranges); anything else is left out. */
function safeText(text: string | undefined): string | undefined {
  const trimmed = text?.trim();
  if (trimmed === undefined || trimmed === '' || trimmed.length > MAX_STRING_VALUE)
    return undefined;
  return DATE_LIKE.test(trimmed) ? undefined : trimmed;
}

function metadataOf(item: ClinicalItem, now: Date): Record<string, unknown> | undefined {
  const metadata: Record<string, unknown> = {};
  if (NODE_TYPE[item.kind] === 'intervention') metadata.intervention_type = item.kind;
  const value =
    typeof item.value === 'number'
      ? Number.isFinite(item.value)
        ? item.value
        : undefined
      : safeText(item.value);
  if (value !== undefined) metadata.value = value;
  const unit = safeText(item.unit);
  if (unit !== undefined) metadata.unit = unit;
  const range = safeText(item.referenceRange);
  if (range !== undefined) metadata.reference_range = range;
  const interpretation = safeText(item.interpretation);
  if (interpretation !== undefined) metadata.interpretation = interpretation;
  const status = safeText(item.status)?.toLowerCase();
  if (status !== undefined) metadata.status = status;
  const days = daysBefore(item.effectiveAt, now);
  if (days !== undefined) metadata.days_before_assembly = days;
  if (item.problemList !== undefined) metadata.problem_list = item.problemList;
  return Object.keys(metadata).length > 0 ? metadata : undefined;
}

/**
 * The AssembledPatient the service is sent, built from the normalized record. Pure: the same
 * record and `now` give the same output.
 *
 * - One node per item that has at least one coding and is not `entered-in-error`; node ids are
 *   `n1..nN` in the order of the item keys (keys may embed feed ids and are never sent).
 * - `notable`: conditions whose status is active/recurrence/relapse, or with no status and on the
 *   problem list; observations whose interpretation is anything but normal (N, normal, NEG).
 * - Metadata: value, unit, reference range, interpretation, status, `days_before_assembly` (never
 *   a calendar date), `problem_list`, and `intervention_type` for medications, procedures and care
 *   plans. String values longer than 64 characters or that read as a date are left out.
 * - No relationships: the service links concepts itself; the worker does not invent clinical edges.
 * - Codings as the feed gave them, displays included (HL7 DG1-3.2, FHIR `coding.display`): they
 *   stay in the stored record only; `prepareForService` replaces each display by the canonical
 *   name or drops it, and counts it, before anything is sent (see strip-free-text.ts).
 * - Demographics: age in whole years (over 89 sent as 90), lower-case administrative gender
 *   (`unknown` when not given), first race given (`unknown` when none).
 *
 * @throws RecordNotAssemblableError when the birth date is missing, unreadable or in the future:
 *   the service requires an age and any guessed age (0, say) would skew its results, so the record
 *   is not sent at all and the caller reports why.
 */
export function assemblePatient(
  record: ClinicalRecord,
  options: AssembleOptions,
): AssembledPatient {
  const { now } = options;
  const demographics = {
    age: ageAt(record.patient.birthDate, now),
    gender: genderOf(record.patient.gender),
    race: raceOf(record.patient.race),
  };
  const items = Object.values(record.items)
    .filter((item) => item.status?.trim().toLowerCase() !== 'entered-in-error')
    .flatMap((item) => {
      const nodeType = NODE_TYPE[item.kind];
      return nodeType === null ? [] : [{ item, nodeType, coding: codingsOf(item) }];
    })
    .filter(({ coding }) => coding.length > 0)
    .sort((a, b) => (a.item.key < b.item.key ? -1 : a.item.key > b.item.key ? 1 : 0));
  const nodes = items.map(({ item, nodeType, coding }, i): AssembleNode => {
    const node: AssembleNode = {
      id: `n${i + 1}`,
      node_type: nodeType,
      notable: isNotable(item),
      coding,
    };
    if (item.fhirId !== undefined && item.fhirId.trim() !== '') node.fhir_id = item.fhirId.trim();
    const metadata = metadataOf(item, now);
    if (metadata !== undefined) node.metadata = metadata;
    return node;
  });
  return { nodes, relationships: [], demographics };
}
