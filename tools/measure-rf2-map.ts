/**
 * How long a hospital's RF2 SNOMED CT to ICD-10-CM map takes to load at start-up, the heap it
 * holds, and how fast rules resolve:
 *
 *   node tools/measure-rf2-map.ts [rows = 130000]
 *
 * Writes a synthetic ExtendedMap file of its own (two rows per concept: an age rule, then
 * OTHERWISE TRUE; NLM's map is licensed and never used here) to the temporary directory, loads it
 * with `loadRf2ExtendedMap`, resolves 100,000 lookups, and prints one JSON line. A figure, not a test.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  loadRf2ExtendedMap,
  resolveRf2,
  RF2_EXTENDED_MAP_COLUMNS,
} from '../src/terminology/rf2-extended-map.ts';

const rowCount = Number(process.argv[2] ?? 130_000);
const AGE = 'IFA 445518008 | Age at onset of clinical finding (observable entity) | < 18.0 years';
const lines = [RF2_EXTENDED_MAP_COLUMNS.join('\t')];
for (let i = 0; i < rowCount; i++) {
  const first = i % 2 === 0;
  lines.push(
    [
      `row-${i}`,
      '20250301',
      '1',
      '5991000124107',
      '6011000124106',
      String(100_000_000 + Math.floor(i / 2)),
      '1',
      first ? '1' : '2',
      first ? AGE : 'OTHERWISE TRUE',
      'synthetic advice',
      first ? 'E10.9' : 'E11.9',
      '447561005',
      '447637006',
    ].join('\t'),
  );
}
const dir = mkdtempSync(join(tmpdir(), 'cw-rf2-'));
const file = join(dir, 'der2_iisssccRefset_ExtendedMapSnapshot_SYNTHETIC.txt');
writeFileSync(file, lines.join('\r\n'));
try {
  const heapBefore = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const map = loadRf2ExtendedMap(file);
  const loadMs = performance.now() - t0;
  const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 1e6;
  const lookups = 100_000;
  const t1 = performance.now();
  for (let i = 0; i < lookups; i++) {
    resolveRf2(map, String(100_000_000 + (i % map.size)), { ageYears: i % 40, gender: 'male' });
  }
  const resolveS = (performance.now() - t1) / 1_000;
  console.log(
    JSON.stringify({
      rows: rowCount,
      concepts: map.size,
      load_ms: Math.round(loadMs),
      heap_mb: Math.round(heapMb),
      resolves_per_s: Math.round(lookups / resolveS),
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
