import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { packageFile } from '../package-root.ts';

/** Codes AHRQ uses only for default assignment: they are not problem-list categories. */
export const PLACEHOLDER_CATEGORIES: ReadonlySet<string> = new Set([
  'XXX000',
  'XXX111',
  'NoDX1',
  'InvlDX',
]);

export interface CcsrCategory {
  /** e.g. `END002` */
  readonly code: string;
  readonly description: string;
  /** The three-letter body system the code starts with, e.g. `END`. */
  readonly bodySystem: string;
}

export interface CcsrBodySystem {
  readonly code: string;
  readonly description: string;
}

export interface CcsrTables {
  readonly version: 'v2023.1';
  /** Real problem categories only, in file order (placeholders left out). */
  readonly categories: readonly CcsrCategory[];
  readonly bodySystems: readonly CcsrBodySystem[];
  category(code: string): CcsrCategory | undefined;
  bodySystem(code: string): CcsrBodySystem | undefined;
  /** True for a real CCSR v2023.1 problem category (placeholders are not). */
  isCategory(code: string): boolean;
}

const DATA_DIR = 'data/ccsr/';

function readRows(file: string): string[][] {
  return parse(readFileSync(packageFile(`${DATA_DIR}${file}`), 'utf8'), {
    from_line: 2,
    skip_empty_lines: true,
    trim: true,
  });
}

let cached: CcsrTables | undefined;

/** Loads the shipped CCSR v2023.1 tables once per process. */
export function loadCcsrTables(): CcsrTables {
  if (cached) return cached;
  const categories = readRows('ccsr-categories-v2023.1.csv')
    .filter(([code]) => code !== undefined && !PLACEHOLDER_CATEGORIES.has(code))
    .map(([code = '', description = '']) => ({ code, description, bodySystem: code.slice(0, 3) }));
  const bodySystems = readRows('ccsr-body-systems-v2023.1.csv').map(
    ([code = '', description = '']) => ({ code, description }),
  );
  const byCategory = new Map(categories.map((c) => [c.code, c]));
  const byBodySystem = new Map(bodySystems.map((b) => [b.code, b]));
  cached = {
    version: 'v2023.1',
    categories,
    bodySystems,
    category: (code) => byCategory.get(code),
    bodySystem: (code) => byBodySystem.get(code),
    isCategory: (code) => byCategory.has(code),
  };
  return cached;
}
