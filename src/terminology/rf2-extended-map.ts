import { readFileSync } from 'node:fs';
import { mapRuleHolds, type MapRuleContext } from './map-rule.ts';
import { formatIcd10Cm } from './problem-code-systems.ts';
import { TerminologyFileError } from './terminology-file-error.ts';

/** The refset id of NLM's SNOMED CT to ICD-10-CM map (US Edition). */
export const NLM_ICD10CM_REFSET_ID = '6011000124106';

/** The RF2 ExtendedMap columns, in their order. */
export const RF2_EXTENDED_MAP_COLUMNS = [
  'id',
  'effectiveTime',
  'active',
  'moduleId',
  'refsetId',
  'referencedComponentId',
  'mapGroup',
  'mapPriority',
  'mapRule',
  'mapAdvice',
  'mapTarget',
  'correlationId',
  'mapCategoryId',
] as const;

interface MapRow {
  readonly group: number;
  readonly priority: number;
  readonly rule: string;
  /** ICD-10-CM as the worker writes it; undefined: no target in this group. */
  readonly target: string | undefined;
}

/** SNOMED CT concept id -> its active rows, by group then priority. */
export type Rf2ExtendedMap = ReadonlyMap<string, readonly MapRow[]>;

/**
 * Reads the text of an RF2 ExtendedMap reference set file (tab-separated, header line, CRLF or
 * LF): a Snapshot, or a Full file (the row with the latest `effectiveTime` of each `id` counts).
 * Only `active = 1` rows of `refsetId` are kept.
 *
 * @throws TerminologyFileError on a wrong header, a row with the wrong number of fields, or a
 *   non-empty target that is not an ICD-10-CM code.
 */
export function parseRf2ExtendedMap(
  text: string,
  options: { file?: string; refsetId?: string } = {},
): Rf2ExtendedMap {
  const file = options.file ?? 'the RF2 map';
  const refsetId = options.refsetId ?? NLM_ICD10CM_REFSET_ID;
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const header = (lines[0] ?? '').split('\t').map((h) => h.trim());
  if (RF2_EXTENDED_MAP_COLUMNS.some((name, i) => header[i] !== name)) {
    throw new TerminologyFileError(
      `${file}: the header is not that of an RF2 ExtendedMap file (${RF2_EXTENDED_MAP_COLUMNS.join(' ')})`,
    );
  }
  const latest = new Map<string, { time: string; active: boolean; concept: string; row: MapRow }>();
  for (let n = 1; n < lines.length; n++) {
    const line = lines[n] ?? '';
    if (line.trim() === '') continue;
    const f = line.split('\t');
    if (f.length !== RF2_EXTENDED_MAP_COLUMNS.length) {
      throw new TerminologyFileError(`${file}: line ${n + 1} has ${f.length} fields, not 13`);
    }
    const [id = '', time = '', active, , refset, concept = '', group, priority, rule = ''] = f;
    if (refset !== refsetId) continue;
    const rawTarget = (f[10] ?? '').trim();
    const target = rawTarget === '' ? undefined : formatIcd10Cm(rawTarget);
    if (rawTarget !== '' && target === undefined) {
      throw new TerminologyFileError(`${file}: line ${n + 1}: mapTarget is not an ICD-10-CM code`);
    }
    const previous = latest.get(id);
    if (previous !== undefined && previous.time > time) continue;
    latest.set(id, {
      time,
      active: active === '1',
      concept: concept.trim(),
      row: { group: Number(group), priority: Number(priority), rule, target },
    });
  }
  const byConcept = new Map<string, MapRow[]>();
  for (const { active, concept, row } of latest.values()) {
    if (!active) continue;
    const rows = byConcept.get(concept) ?? [];
    rows.push(row);
    byConcept.set(concept, rows);
  }
  for (const rows of byConcept.values()) {
    rows.sort((a, b) => a.group - b.group || a.priority - b.priority);
  }
  return byConcept;
}

/** Reads an RF2 ExtendedMap file from disk (see {@link parseRf2ExtendedMap}). */
export function loadRf2ExtendedMap(path: string): Rf2ExtendedMap {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new TerminologyFileError(`the RF2 map file ${path} cannot be read`, { cause: error });
  }
  return parseRf2ExtendedMap(text, { file: path });
}

/**
 * The ICD-10-CM codes a SNOMED CT concept maps to for this patient: in each map group (all groups
 * apply, in order) the target of the first rule by `mapPriority` that holds; a group whose chosen
 * row has no target adds nothing. Undefined when the concept is not in the map at all; `[]` when it
 * is but no group gives a target (the map says "no ICD-10-CM code").
 */
export function resolveRf2(
  map: Rf2ExtendedMap,
  concept: string,
  context: MapRuleContext,
): string[] | undefined {
  const rows = map.get(concept.trim());
  if (rows === undefined) return undefined;
  const targets: string[] = [];
  let group: number | undefined;
  let decided = false;
  for (const row of rows) {
    if (row.group !== group) {
      group = row.group;
      decided = false;
    }
    if (decided || !mapRuleHolds(row.rule, context)) continue;
    decided = true;
    if (row.target !== undefined && !targets.includes(row.target)) targets.push(row.target);
  }
  return targets;
}
