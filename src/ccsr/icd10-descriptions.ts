import { readFileSync } from 'node:fs';
import { packageFile } from '../package-root.ts';
import { normalizeIcd10 } from './icd10-ccsr-map.ts';

/** ICD-10-CM code without dot, upper-case (`E119`) -> its official description. */
export type Icd10Descriptions = ReadonlyMap<string, string>;

const DATA_FILE = 'data/ccsr/dxccsr-v2023.1.csv';

/**
 * Builds the map from the text of `dxccsr-v2023.1.csv` (columns `icd10cm_code,
 * icd10cm_description, ...`; a description with a comma is quoted, none holds a quote). A code's
 * rows all carry the same description: the first one is kept.
 *
 * @throws Error when a data line does not start with a code and a description, rather than
 *   silently leaving codes without their name.
 */
export function buildIcd10Descriptions(csvText: string): Icd10Descriptions {
  const map = new Map<string, string>();
  const row = /^([A-Za-z0-9.]+),(?:"([^"\r\n]*)"|([^,"\r\n]*)),/gm;
  let matched = 0;
  for (let m = row.exec(csvText); m !== null; m = row.exec(csvText)) {
    matched++;
    const [, rawCode = '', quoted, bare] = m;
    if (rawCode === 'icd10cm_code') {
      matched--;
      continue;
    }
    const code = normalizeIcd10(rawCode);
    const description = (quoted ?? bare ?? '').trim();
    if (!map.has(code) && description !== '') map.set(code, description);
  }
  let dataLines = 0;
  for (let at = csvText.indexOf('\n'); at !== -1; at = csvText.indexOf('\n', at + 1)) {
    if (csvText.charCodeAt(at + 1) > 32) dataLines++;
  }
  // Let go of the 8 MB subject V8 keeps as the last regex input (see icd10-ccsr-map.ts).
  /x/.exec('x');
  if (matched !== dataLines) {
    throw new Error(
      `dxccsr: ${dataLines - matched} of ${dataLines} rows have no readable description`,
    );
  }
  return map;
}

let cached: Icd10Descriptions | undefined;

/** The shipped v2023.1 descriptions, read on first use and kept for the life of the process. */
export function loadIcd10Descriptions(): Icd10Descriptions {
  cached ??= buildIcd10Descriptions(readFileSync(packageFile(DATA_FILE), 'utf8'));
  return cached;
}

/**
 * The official ICD-10-CM description of `code` (with or without the dot, any case, trimmed), as
 * the shipped CCSR v2023.1 table gives it: `E11.9` -> `Type 2 diabetes mellitus without
 * complications`; undefined for a code the table does not hold.
 */
export function icd10Description(code: string): string | undefined {
  return loadIcd10Descriptions().get(normalizeIcd10(code));
}
