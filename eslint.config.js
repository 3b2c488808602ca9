// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Import rules that keep dependencies pointing one way (see the README, "Layout"). */
const restrict = (...groups) => ({
  'no-restricted-imports': [
    'error',
    { patterns: groups.map(([group, message]) => ({ group: [group], message })) },
  ],
});
const noCli = ['**/cli/**', 'Nothing imports the CLI.'];
const noSimulator = ['**/simulator/**', 'The pipeline never imports the simulator.'];

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
  { files: ['src/**/*.ts', 'workers/**/*.ts'], rules: restrict(noCli, noSimulator) },
  {
    files: ['src/simulator/**/*.ts'],
    rules: restrict(
      noCli,
      ['**/service/**', 'The simulator shares only the interface schemas and the CCSR tables.'],
      ['**/config/**', 'The simulator shares only the interface schemas and the CCSR tables.'],
    ),
  },
  {
    files: ['src/interface/**/*.ts', 'src/ccsr/**/*.ts'],
    rules: restrict(noCli, noSimulator, ['**/service/**', 'Schemas depend on nothing else.']),
  },
  { files: ['src/cli/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
);
