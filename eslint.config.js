// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers of the sources, highest first (see the README, "Layout"). A folder imports modules of
 * its own layer and of lower layers, never of a higher one. Within a layer, `tiers` order the
 * folders further, highest first: a folder imports only from the tiers below its own, so folders of
 * one tier do not import each other. Type-only imports count too.
 */
const LAYERS = [
  { name: 'entry points', tiers: [['src/cli'], ['src/runtime']] },
  { name: 'app composition', tiers: [['src/app']] },
  { name: 'ingest and workers', tiers: [['src/import'], ['src/ingest', 'workers']] },
  {
    name: 'domain',
    tiers: [
      ['src/privacy'],
      ['src/presets', 'src/queries', 'src/terminology', 'src/cds'],
      ['src/records'],
      ['src/delivery'],
      ['src/identity', 'src/trace'],
      ['src/observability', 'src/queues'],
    ],
  },
  {
    name: 'service client and interface schemas',
    tiers: [
      [
        'src/service',
        'src/connections',
        'src/config',
        'src/interface',
        'src/ccsr',
        'src/package-root.ts',
        'src/errors',
      ],
    ],
  },
];

/** Imported for its types only (`import type`), never for a value. */
const types = (/** @type {string} */ folder) => ({ folder, typesOnly: true });

/**
 * Folders whose imports of ours are narrower than their place in the layers allows: all they may
 * import (the README's "may import" column). Folders of the lowest layer are all listed, so that
 * layer's internal order is spelled out here.
 * @type {Record<string, (string | { folder: string, typesOnly: boolean })[]>}
 */
const ONLY = {
  'src/terminology': [
    'src/records',
    'src/connections',
    'src/package-root.ts',
    'src/errors',
    types('src/queues'),
    types('src/config'),
  ],
  'src/observability': ['src/errors'],
  'src/service': ['src/interface', 'src/package-root.ts', 'src/errors'],
  'src/connections': [types('src/config'), 'src/errors'],
  'src/config': [
    'src/ccsr',
    'src/connections',
    'src/package-root.ts',
    'src/errors',
    types('src/service'),
  ],
  'src/interface': [],
  'src/ccsr': ['src/package-root.ts', 'src/errors'],
  'src/package-root.ts': ['src/errors'],
  // The error family's base: every layer may throw its errors.
  'src/errors': [],
  // The local Clinical Graph Service is a separate product: it is in no layer, and nothing imports it.
  'src/simulator': ['src/interface', 'src/ccsr'],
};

/** Single files that may import more than their folder: `may` is added to the folder's list. */
const EXCEPTIONS = [
  {
    file: 'src/identity/rotate-keys.ts',
    may: ['src/delivery'],
    why: 'key rotation re-seals the stored delivery events with the new keys',
  },
];

/** Every placed folder with its rank: the index of its layer and of its tier in that layer. */
const placed = LAYERS.flatMap(({ name, tiers }, layer) =>
  tiers.flatMap((tier, index) => tier.map((folder) => ({ folder, name, layer, tier: index }))),
);
const placeOf = (/** @type {string} */ folder) => placed.find((entry) => entry.folder === folder);
const everyFolder = [...placed.map(({ folder }) => folder), 'src/simulator'];

/** Whether the layer order lets `from` import `to`: `to` is in a lower layer or a lower tier. */
function below(/** @type {string} */ from, /** @type {string} */ to) {
  const a = placeOf(from);
  const b = placeOf(to);
  if (!a || !b) return false;
  return b.layer > a.layer || (b.layer === a.layer && b.tier > a.tier);
}

// An ONLY list narrows what the layer order allows (it may spell out an order within one tier).
for (const [from, list] of Object.entries(ONLY)) {
  for (const to of list) {
    const name = typeof to === 'string' ? to : to.folder;
    const a = placeOf(from);
    const b = placeOf(name);
    if (a && b && !below(from, name) && b.tier !== a.tier) {
      throw new Error(`eslint.config.js: ONLY lets ${from} import ${name}, which is above it`);
    }
  }
}

/** The pattern for imports of `folder`, matched against the import's path as written. */
const globOf = (/** @type {string} */ folder) =>
  folder.endsWith('.ts') ? `**/${folder.split('/').pop()}` : `**/${folder.split('/').pop()}/**`;

/** Why `from` may not import `to` (or only its types): the message of the pattern. */
function reason(/** @type {string} */ from, /** @type {string} */ to) {
  const why = (() => {
    if (to === 'src/cli') return 'Nothing imports the CLI.';
    if (to === 'src/simulator') return 'The pipeline never imports the simulator.';
    if (from === 'src/simulator') return 'The simulator shares only src/interface and src/ccsr.';
    const a = placeOf(from);
    const b = placeOf(to);
    if (a && b && b.layer < a.layer) {
      return `${to} is in a higher layer (${b.name}) than ${from} (${a.name}).`;
    }
    const only = ONLY[from];
    if (only) {
      const names = only.map((entry) =>
        typeof entry === 'string' ? entry : `${entry.folder} (types only)`,
      );
      return `${from} imports ${names.length > 0 ? `only ${names.join(', ')}` : 'nothing of ours'}.`;
    }
    if (a && b && b.tier === a.tier) {
      return `${from} and ${to} are side by side in the ${a.name} layer: neither imports the other.`;
    }
    return `${to} is above ${from} in the ${a?.name} layer.`;
  })();
  return `${why} (README, "Layout")`;
}

/** The `no-restricted-imports` options for the files of `folder`, which may also import `extra`. */
function restrictionsOf(/** @type {string} */ folder, /** @type {string[]} */ extra = []) {
  const allowed = (ONLY[folder] ?? everyFolder.filter((to) => below(folder, to)))
    .map((to) => (typeof to === 'string' ? { folder: to, typesOnly: false } : to))
    .concat(extra.map((to) => ({ folder: to, typesOnly: false })));
  const patterns = everyFolder
    .filter((to) => to !== folder)
    .flatMap((to) => {
      const allowance = allowed.find((entry) => entry.folder === to);
      if (allowance && !allowance.typesOnly) return [];
      const pattern = { group: [globOf(to)], message: reason(folder, to) };
      return [allowance ? { ...pattern, allowTypeImports: true } : pattern];
    });
  return { 'no-restricted-imports': ['error', { patterns }] };
}

const TESTS = '**/*.test.ts';
const filesOf = (/** @type {string} */ folder) =>
  folder.endsWith('.ts') ? [folder] : [`${folder}/**/*.ts`];
const patternsOf = (/** @type {string} */ folder, /** @type {string[]} */ targets) =>
  targets.map((to) => ({ group: [globOf(to)], message: reason(folder, to) }));

/**
 * The import rules: one block per placed folder (a later block's `no-restricted-imports` replaces
 * an earlier one's for the same file, so each block carries all of its folder's restrictions).
 * A source folder placed in no layer may import nothing of ours outside itself until it is placed
 * (a file directly in src/, nothing of ours at all).
 * Tests beside the code are out of the layer order (nothing imports a test and the build leaves
 * them out, while a test may wire its module to real neighbours: a Redis connection, the loaded
 * configuration, the CCSR tables); they still never import the CLI or the simulator, and the
 * simulator's and the schemas' tests keep their folder's rules.
 */
const unplaced = (/** @type {string[]} */ group) => ({
  'no-restricted-imports': [
    'error',
    {
      patterns: [
        {
          group,
          message:
            'This file is in no layer: place its folder in LAYERS in eslint.config.js (README, "Layout").',
        },
      ],
    },
  ],
});

const layerRules = [
  { files: ['src/**/*.ts', 'workers/**/*.ts'], ignores: [TESTS], rules: unplaced(['../**']) },
  { files: ['src/*.ts'], ignores: [TESTS], rules: unplaced(['./**', '../**']) },
  ...everyFolder.map((folder) => ({
    files: filesOf(folder),
    ignores: [TESTS],
    rules: restrictionsOf(folder),
  })),
  ...EXCEPTIONS.map(({ file, may }) => ({
    files: [file],
    rules: restrictionsOf(file.slice(0, file.lastIndexOf('/')), may),
  })),
  {
    files: ['src/**/*.test.ts', 'workers/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: patternsOf('test', ['src/cli', 'src/simulator']) },
      ],
    },
  },
  ...['src/simulator', 'src/interface', 'src/ccsr'].map((folder) => ({
    files: [`${folder}/${TESTS}`],
    rules: restrictionsOf(folder),
  })),
  { files: ['src/cli/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'demo-output/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  ...tseslint.configs.stylistic,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  ...layerRules,
  {
    // bin/project-node.cjs runs on an old Node.js, so it is CommonJS with old syntax on purpose.
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', __dirname: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off', 'no-var': 'off' },
  },
);
