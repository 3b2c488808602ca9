import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { codeMapKey, type CodeMap } from './code-map.ts';
import { formatIcd10Cm } from './problem-code-systems.ts';
import { TerminologyFileError } from './terminology-file-error.ts';

/**
 * Reads a hospital's plain CSV map, header `system,code,icd10cm`: one row per target (a code with
 * two rows maps to both). `system` is a FHIR URI, an OID or an HL7 v2 name (`I9`, `SCT`, a local
 * system name); `icd10cm` with or without the dot. Extra columns (a description) are ignored.
 *
 * @throws TerminologyFileError on a missing column, an empty field or a target that is not an
 *   ICD-10-CM code (named by line, never by content).
 */
export function parseCsvCodeMap(text: string, file = 'the CSV map'): CodeMap {
  let rows: Record<string, string>[];
  try {
    rows = parse(text.replace(/^\uFEFF/, ''), {
      columns: (header: string[]) => header.map((h) => h.trim().toLowerCase()),
      skip_empty_lines: true,
      trim: true,
      relax_column_count: true,
    });
  } catch (error) {
    throw new TerminologyFileError(`${file} is not readable CSV`, { cause: error });
  }
  const map = new Map<string, string[]>();
  rows.forEach((row, i) => {
    const line = i + 2;
    const { system, code, icd10cm } = row;
    if (!system || !code || !icd10cm) {
      throw new TerminologyFileError(`${file}: line ${line} needs system, code and icd10cm`);
    }
    const target = formatIcd10Cm(icd10cm);
    if (target === undefined) {
      throw new TerminologyFileError(`${file}: line ${line}: icd10cm is not an ICD-10-CM code`);
    }
    const key = codeMapKey(system, code);
    const targets = map.get(key) ?? [];
    if (!targets.includes(target)) targets.push(target);
    map.set(key, targets);
  });
  return map;
}

/** Reads a CSV map from disk (see {@link parseCsvCodeMap}). */
export function loadCsvCodeMap(path: string): CodeMap {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new TerminologyFileError(`the CSV map file ${path} cannot be read`, { cause: error });
  }
  return parseCsvCodeMap(text, path);
}
