import { readFileSync } from 'node:fs';
import { packageFile } from '../package-root.ts';
import { PLACEHOLDER_CATEGORIES } from './ccsr-tables.ts';

export type CcsrMode = 'all' | 'outpatient_default';

/** The categories of one ICD-10-CM code, in file order, placeholders left out. */
export interface Icd10CcsrEntry {
  readonly all: readonly string[];
  /** The rows flagged `outpatient_default` Y (the category AHRQ assigns a first-listed diagnosis). */
  readonly outpatientDefault: readonly string[];
}

/** ICD-10-CM code without dot, upper-case (`E119`) -> its categories. */
export type Icd10CcsrMap = ReadonlyMap<string, Icd10CcsrEntry>;

const DATA_FILE = 'data/ccsr/dxccsr-v2023.1.csv';

/**
 * Builds the map from the text of `dxccsr-v2023.1.csv` (header `icd10cm_code, icd10cm_description,
 * ccsr_category, inpatient_default, outpatient_default`; one row per line, only the description
 * is ever quoted). Descriptions are not kept, and codes with the same categories share one entry.
 */
export function buildIcd10CcsrMap(csvText: string): Icd10CcsrMap {
  const rows = new Map<string, { all: string[]; outpatientDefault: string[] }>();
  // code, "description, maybe with commas", category, inpatient, outpatient: anchored at both ends.
  const row = /^([A-Za-z0-9.]+),.*,([A-Za-z0-9]+),([YNX]),([YNX])\r?$/gm;
  let matched = 0;
  for (let m = row.exec(csvText); m !== null; m = row.exec(csvText)) {
    matched++;
    const [, rawCode = '', category = '', , outpatient] = m;
    if (PLACEHOLDER_CATEGORIES.has(category)) continue;
    const code = normalizeIcd10(rawCode);
    let entry = rows.get(code);
    if (entry === undefined) {
      entry = { all: [], outpatientDefault: [] };
      rows.set(code, entry);
    }
    if (!entry.all.includes(category)) entry.all.push(category);
    if (outpatient === 'Y' && !entry.outpatientDefault.includes(category)) {
      entry.outpatientDefault.push(category);
    }
  }
  let dataLines = 0;
  for (let at = csvText.indexOf('\n'); at !== -1; at = csvText.indexOf('\n', at + 1)) {
    if (csvText.charCodeAt(at + 1) > 32) dataLines++;
  }
  // V8 keeps the last regex subject (legacy RegExp.input): point it at a short string so the
  // 8 MB text is not held for the life of the process.
  /x/.exec('x');
  if (matched !== dataLines) {
    throw new Error(`dxccsr: ${dataLines - matched} of ${dataLines} rows are unreadable`);
  }
  // Most codes share their categories with many others: keep one frozen entry per distinct set.
  const shared = new Map<string, Icd10CcsrEntry>();
  const map = new Map<string, Icd10CcsrEntry>();
  for (const [code, entry] of rows) {
    const key = `${entry.all.join(',')}|${entry.outpatientDefault.join(',')}`;
    let frozen = shared.get(key);
    if (frozen === undefined) {
      frozen = Object.freeze({
        all: Object.freeze([...entry.all]),
        outpatientDefault: Object.freeze([...entry.outpatientDefault]),
      });
      shared.set(key, frozen);
    }
    map.set(code, frozen);
  }
  return map;
}

/** `E11.9`, ` e119 ` -> `E119`. */
export function normalizeIcd10(code: string): string {
  return code.trim().replaceAll('.', '').toUpperCase();
}

/** The categories `code` maps to in `map` (a fresh array; [] for an unknown code). */
export function lookupCcsrCategories(map: Icd10CcsrMap, code: string, mode: CcsrMode): string[] {
  const entry = map.get(normalizeIcd10(code));
  if (entry === undefined) return [];
  return [...(mode === 'all' ? entry.all : entry.outpatientDefault)];
}

let cached: Icd10CcsrMap | undefined;

/** The shipped v2023.1 map, read on first use and kept for the life of the process. */
export function loadIcd10CcsrMap(): Icd10CcsrMap {
  cached ??= buildIcd10CcsrMap(readFileSync(packageFile(DATA_FILE), 'utf8'));
  return cached;
}

/**
 * The CCSR v2023.1 categories of an ICD-10-CM code (with or without the dot, any case, spaces
 * trimmed): `E11.9` -> `['END002']` (outpatient_default) or `['END002', 'END005']` (all). The
 * placeholders (XXX000, XXX111, NoDX1, InvlDX) are never returned; an unknown code gives [].
 * Note: some codes have no outpatient default (all rows N/X, e.g. B95.0) and give [] in that mode.
 */
export function ccsrCategoriesForIcd10(code: string, mode: CcsrMode): string[] {
  return lookupCcsrCategories(loadIcd10CcsrMap(), code, mode);
}
