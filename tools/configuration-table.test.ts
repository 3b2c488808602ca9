import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENV_PATHS } from '../src/config/load-config.ts';

const PAGE = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
const HEADER = /^\| variable +\| config path +\| meaning +\| default +\|$/;

/**
 * The settings table of docs/configuration.md: the lines from its header to the first blank line
 * (Markdown ends a table there; whatever follows is shown as plain text).
 */
function settingsTable(): { rows: string[]; after: string[] } {
  const lines = PAGE.split('\n');
  const start = lines.findIndex((line) => HEADER.test(line));
  expect(start, 'the settings table header').toBeGreaterThan(-1);
  const end = lines.findIndex((line, i) => i > start && line.trim() === '');
  const rows = lines.slice(start + 2, end);
  // Up to the next heading: where rows cut off from the table by a blank line would be.
  const next = lines.findIndex((line, i) => i > end && line.startsWith('#'));
  return { rows, after: lines.slice(end + 1, next) };
}

/** The variables a row names in its first column (`INGEST_PORT`, `INGEST_HOST`; — for none). */
function variablesOf(row: string): string[] {
  const first = row.split('|')[1] ?? '';
  return [...first.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)].map((m) => m[1] ?? '');
}

describe('docs/configuration.md, the settings table', () => {
  it('is one table: every line up to its end is a row, and no row follows it cut off by a blank line', () => {
    const { rows, after } = settingsTable();
    expect(rows.length).toBeGreaterThan(60);
    for (const row of rows) expect(row, row).toMatch(/^\|.*\|$/);
    for (const row of rows) expect(row.split('|').length, row).toBe(6);
    expect(
      after.filter((line) => line.startsWith('|')),
      'rows after a blank line',
    ).toEqual([]);
  });

  it('names every environment variable the configuration reads, each in one row', () => {
    const { rows } = settingsTable();
    const named = rows.flatMap(variablesOf);
    // http_proxy and friends are the lower-case forms of the HTTP_PROXY rows.
    const variables = new Set(ENV_PATHS.map(([variable]) => variable.toUpperCase()));
    const missing = [...variables].filter((v) => !named.includes(v));
    expect(missing, 'variables without a row').toEqual([]);
    const twice = [...variables].filter((v) => named.filter((n) => n === v).length > 1);
    expect(twice, 'variables in more than one row').toEqual([]);
  });
});
