// ESLint flat config: typescript-eslint strictTypeChecked everywhere, plus the house rule
// that files which decide (plan, render, parse, resolve, reconcile, categorize, index) do
// no I/O: they may not import child_process, fs, net, dgram or src/os.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const pureFiles = [
  'src/**/plan*.ts',
  'src/**/render*.ts',
  'src/**/parse*.ts',
  'src/**/resolve*.ts',
  'src/**/reconcile*.ts',
  'src/**/categorize*.ts',
  'src/**/index*.ts',
  'src/**/record-index.ts',
  'src/proxy/model/**/*.ts',
  'src/trace/**/*.ts',
];

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'build/**',
      'node_modules/**',
      'eslint.config.js',
      'scripts/*.mjs',
      'bin/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowNullish: true },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'Use string-literal unions, not enums.' },
        { selector: 'ExportDefaultDeclaration', message: 'Named exports only.' },
      ],
    },
  },
  {
    files: ['**/*.test.ts', 'test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] },
          ],
        },
      ],
    },
  },
  {
    // Validators read wire data whose static types are what the API promises, not what a
    // user wrote: "impossible" comparisons are exactly the checks they exist to make.
    files: ['src/**/validate*.ts', 'src/**/manifest*.ts', 'src/**/config*.ts'],
    rules: { '@typescript-eslint/no-unnecessary-condition': 'off' },
  },
  {
    files: pureFiles,
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            'node:child_process',
            'node:fs',
            'node:fs/promises',
            'node:net',
            'node:dgram',
            'child_process',
            'fs',
            'net',
            'dgram',
          ],
          patterns: [{ group: ['**/os/*', '**/os/**'], message: 'Pure cores do no I/O.' }],
        },
      ],
    },
  },
);
