import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CORPUS_DIR, corpusFiles, loadCorpus } from './support/corpus-runner.ts';

/**
 * The public corpus (test/corpus/, see its SOURCES.md) is complete and sourced: every file has
 * exactly one expectation and a full SOURCES row. `corpus.test.ts` sends every item through the
 * real listeners.
 */
const corpus = loadCorpus();

describe('test/corpus', () => {
  it('holds at least 40 public files, each with exactly one expectation', () => {
    const files = corpusFiles();
    expect(files.length).toBeGreaterThanOrEqual(40);
    expect(corpus.map((i) => i.file).sort()).toEqual([...files].sort());
  });

  it('names the repository or URL, licence and path of every file in SOURCES.md', () => {
    const sources = readFileSync(`${CORPUS_DIR}SOURCES.md`, 'utf8');
    const rows = new Map(
      sources
        .split('\n')
        .filter((l) => l.startsWith('| `'))
        .map((l) => [/^\| `([^`]+)`/.exec(l)?.[1] ?? '', l.split('|').map((c) => c.trim())]),
    );
    for (const file of corpusFiles()) {
      const row = rows.get(file);
      expect(row, `SOURCES.md row for ${file}`).toBeDefined();
      // | file | source | path | commit | licence | sha256 | ... : every cell filled.
      expect(
        row?.slice(1, 7).every((cell) => cell.length > 0),
        `${file} row complete`,
      ).toBe(true);
    }
  });
});
