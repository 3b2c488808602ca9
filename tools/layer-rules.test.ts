import { posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

// The layer order, restated here from docs/architecture.md ("Layout") so that the test checks
// eslint.config.js against the rule it is meant to enforce, not against itself. Highest first.
const ENTRY = ['src/cli', 'src/runtime'];
const APP = ['src/app'];
const EDGE = ['src/import', 'src/ingest', 'workers'];
const DOMAIN = [
  'src/privacy',
  'src/presets',
  'src/queries',
  'src/terminology',
  'src/cds',
  'src/records',
  'src/delivery',
  'src/identity',
  'src/observability',
  'src/queues',
];
const BASE = [
  'src/service',
  'src/connections',
  'src/config',
  'src/interface',
  'src/ccsr',
  'src/package-root.ts',
  'src/errors',
];
const SIMULATOR = 'src/simulator';
const LAYERS = [ENTRY, APP, EDGE, DOMAIN, BASE];
const FOLDERS = [...LAYERS.flat(), SIMULATOR];

const below = (...folders: string[]) => [...folders, ...BASE];

/** Everything each folder may import of ours (values and types), besides its own modules. */
const MAY: Record<string, string[]> = {
  'src/cli': FOLDERS.filter((folder) => folder !== 'src/cli'),
  'src/runtime': [...APP, ...EDGE, ...DOMAIN, ...BASE],
  'src/app': [...EDGE, ...DOMAIN, ...BASE],
  // The Bulk Data import applies each patient's resources through the FHIR feed's Bundle path.
  'src/import': ['src/ingest', 'workers', ...DOMAIN, ...BASE],
  'src/ingest': [...DOMAIN, ...BASE],
  workers: [...DOMAIN, ...BASE],
  // The domain's order as it stands: privacy, then presets / queries / terminology / cds side by side,
  // records, delivery, identity, then observability and queues.
  'src/privacy': below(...DOMAIN.filter((folder) => folder !== 'src/privacy')),
  'src/presets': below(...DOMAIN.slice(5)),
  'src/queries': below(...DOMAIN.slice(5)),
  // The CDS Hooks service's kept results, cards and tokens: beside presets and queries.
  'src/cds': below(...DOMAIN.slice(5)),
  'src/terminology': ['src/records', 'src/connections', 'src/package-root.ts', 'src/errors'],
  'src/records': below(...DOMAIN.slice(6)),
  'src/delivery': below(...DOMAIN.slice(7)),
  'src/identity': below(...DOMAIN.slice(8)),
  'src/observability': ['src/errors'],
  'src/queues': below(),
  'src/service': ['src/interface', 'src/package-root.ts', 'src/errors'],
  'src/connections': ['src/errors'],
  'src/config': ['src/ccsr', 'src/connections', 'src/package-root.ts', 'src/errors'],
  'src/interface': [],
  'src/ccsr': ['src/package-root.ts', 'src/errors'],
  'src/package-root.ts': ['src/errors'],
  // The error family's base: imports nothing of ours.
  'src/errors': [],
  [SIMULATOR]: ['src/interface', 'src/ccsr'],
};

/** What a folder may import for its types only (`import type`), on top of MAY. */
const TYPES_ONLY: Record<string, string[]> = {
  'src/terminology': ['src/queues', 'src/config'],
  'src/connections': ['src/config'],
  'src/config': ['src/service'],
};

const root = fileURLToPath(new URL('..', import.meta.url));
let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: root });
});

/** A file of `folder` (the folder's own file when it is one), `depth` subfolders down. */
const fileIn = (folder: string, depth = 0) =>
  folder.endsWith('.ts')
    ? folder
    : posix.join(folder, ...Array<string>(depth).fill('sub'), 'layer-probe.ts');

/** How a file at `from` writes an import of a module of `folder`. */
function specifier(from: string, folder: string): string {
  const target = folder.endsWith('.ts') ? folder : `${folder}/probe.ts`;
  const relative = posix.relative(posix.dirname(from), target);
  return relative.startsWith('.') ? relative : `./${relative}`;
}

/** The targets whose import is refused in `code`, which has one import of `targets[i]` a line. */
async function refused(file: string, code: string, targets: string[]): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: posix.join(root, file) });
  expect(result?.messages.filter((message) => message.fatal)).toEqual([]);
  const lines = new Set(
    (result?.messages ?? [])
      .filter((message) => message.ruleId === 'no-restricted-imports')
      .map((message) => message.line),
  );
  return targets.filter((_, index) => lines.has(index + 1));
}

type Kind = 'value' | 'type';
const line = (kind: Kind, from: string, to: string, index: number) =>
  kind === 'value'
    ? `import { probe${index} } from '${specifier(from, to)}';`
    : `import type { Probe${index} } from '${specifier(from, to)}';`;

async function refusedOf(folder: string, kind: Kind, depth = 0): Promise<string[]> {
  const file = fileIn(folder, depth);
  const targets = FOLDERS.filter((to) => to !== folder);
  const code = targets.map((to, index) => line(kind, file, to, index)).join('\n');
  return refused(file, code, targets);
}

function expectedRefusals(folder: string, kind: Kind): string[] {
  const may = [...(MAY[folder] ?? []), ...(kind === 'type' ? (TYPES_ONLY[folder] ?? []) : [])];
  return FOLDERS.filter((to) => to !== folder && !may.includes(to));
}

describe('eslint layer rules (no-restricted-imports)', () => {
  it('restates every folder of the layers once', () => {
    expect(new Set(FOLDERS).size).toBe(FOLDERS.length);
    expect(Object.keys(MAY).sort()).toEqual([...FOLDERS].sort());
  });

  it('never lets a folder import a higher layer, for values and types', () => {
    for (const [index, layer] of LAYERS.entries()) {
      for (const folder of layer) {
        for (const higher of LAYERS.slice(0, index).flat()) {
          expect(MAY[folder], `${folder} -> ${higher}`).not.toContain(higher);
          expect(TYPES_ONLY[folder] ?? [], `${folder} -> ${higher}`).not.toContain(higher);
        }
      }
    }
    expect(MAY['src/ingest']).not.toContain('workers');
    expect(MAY.workers).not.toContain('src/ingest');
  });

  for (const folder of FOLDERS) {
    for (const kind of ['value', 'type'] as const) {
      it(`${folder}: ${kind} imports refused exactly where the layers say`, async () => {
        expect(await refusedOf(folder, kind)).toEqual(expectedRefusals(folder, kind));
      });
    }
  }

  it('holds for files in subfolders too', async () => {
    for (const folder of ['src/ingest', 'src/records', 'src/config', SIMULATOR, 'src/app']) {
      expect(await refusedOf(folder, 'value', 2), folder).toEqual(
        expectedRefusals(folder, 'value'),
      );
    }
  });

  it('refuses re-exports of a higher layer', async () => {
    const file = fileIn('src/queries');
    const code = [
      `export { probe } from '${specifier(file, 'src/ingest')}';`,
      `export * from '${specifier(file, 'workers')}';`,
      `export type { Probe } from '${specifier(file, 'src/app')}';`,
    ].join('\n');
    expect(await refused(file, code, ['src/ingest', 'workers', 'src/app'])).toEqual([
      'src/ingest',
      'workers',
      'src/app',
    ]);
  });

  it('lets key rotation (src/identity/rotate-keys.ts) import src/delivery, and no other identity file', async () => {
    for (const [file, expected] of [
      ['src/identity/rotate-keys.ts', []],
      ['src/identity/crosswalk.ts', ['src/delivery']],
    ] as const) {
      const code = `import { probe } from '${specifier(file, 'src/delivery')}';`;
      expect(await refused(file, code, ['src/delivery']), file).toEqual(expected);
    }
  });

  it('refuses every import from outside a folder placed in no layer, with the reason', async () => {
    for (const [file, code, lines] of [
      [
        'src/unplaced/module.ts',
        `import { a } from '../queues/a.ts';\nimport { b } from './b.ts';`,
        [1],
      ],
      [
        'src/unplaced.ts',
        `import { a } from './queues/a.ts';\nimport { b } from './b.ts';`,
        [1, 2],
      ],
    ] as const) {
      const [result] = await eslint.lintText(code, { filePath: posix.join(root, file) });
      const messages = (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports');
      expect(
        messages.map((m) => m.line),
        file,
      ).toEqual(lines);
      expect(messages[0]?.message).toContain('in no layer');
    }
  });

  it('leaves tests beside the code out of the layer order, but never lets them import the CLI or the simulator', async () => {
    const file = 'src/queues/probe.test.ts';
    const targets = FOLDERS.filter((to) => to !== 'src/queues');
    const code = targets.map((to, index) => line('value', file, to, index)).join('\n');
    expect(await refused(file, code, targets)).toEqual(['src/cli', SIMULATOR]);
  });

  it('keeps the simulator and the schemas to their rules in their tests too', async () => {
    for (const folder of [SIMULATOR, 'src/interface', 'src/ccsr']) {
      const file = `${folder}/probe.test.ts`;
      const targets = FOLDERS.filter((to) => to !== folder);
      const code = targets.map((to, index) => line('value', file, to, index)).join('\n');
      expect(await refused(file, code, targets), folder).toEqual(expectedRefusals(folder, 'value'));
    }
  });

  it('names the layers in its message', async () => {
    const file = fileIn('src/records');
    const [result] = await eslint.lintText(
      `import type { Probe } from '${specifier(file, 'workers')}';`,
      {
        filePath: posix.join(root, file),
      },
    );
    const messages = (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports');
    expect(messages.map((m) => m.message)).toEqual([
      expect.stringContaining(
        'workers is in a higher layer (ingest and workers) than src/records (domain)',
      ),
    ]);
  });
});
