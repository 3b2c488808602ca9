import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { CODE_SYSTEMS } from '../records/clinical-record.ts';
import { codeMapKey, type CodeMap } from './code-map.ts';
import { formatIcd10Cm } from './problem-code-systems.ts';
import { packageFile } from '../package-root.ts';

/** How a row of the embedded map was chosen (see `data/terminology/SOURCE.md`). */
export type EmbeddedBasis = 'title' | 'unspecified' | 'index';

export interface EmbeddedMapRow {
  readonly snomedCtId: string;
  readonly snomedCtTerm: string;
  readonly icd10cm: string;
  readonly icd10cmDescription: string;
  readonly basis: EmbeddedBasis;
}

const DATA_FILE = 'data/terminology/snomed-ct-icd10cm-common.csv';

let rows: readonly EmbeddedMapRow[] | undefined;
let map: CodeMap | undefined;

/** The rows of the shipped table of common chronic problem-list concepts, read once. */
export function embeddedMapRows(): readonly EmbeddedMapRow[] {
  if (rows !== undefined) return rows;
  const records: Record<string, string>[] = parse(readFileSync(packageFile(DATA_FILE), 'utf8'), {
    columns: true,
    skip_empty_lines: true,
    trim: true,
  });
  rows = records.map((r) => ({
    snomedCtId: r.snomed_ct_id ?? '',
    snomedCtTerm: r.snomed_ct_term ?? '',
    icd10cm: formatIcd10Cm(r.icd10cm_code ?? '') ?? '',
    icd10cmDescription: r.icd10cm_description ?? '',
    basis: (r.basis ?? '') as EmbeddedBasis,
  }));
  return rows;
}

/**
 * The embedded default map (SNOMED CT -> ICD-10-CM) of a few dozen common chronic problem-list
 * concepts: our own curated table, so that Synthea-style data works without any file. Lowest
 * precedence: a hospital's file or terminology server answers first.
 */
export function embeddedProblemMap(): CodeMap {
  if (map !== undefined) return map;
  const built = new Map<string, string[]>();
  for (const row of embeddedMapRows()) {
    const key = codeMapKey(CODE_SYSTEMS.snomed, row.snomedCtId);
    built.set(key, [...(built.get(key) ?? []), row.icd10cm]);
  }
  map = built;
  return map;
}
