// @ts-check
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'drizzle/', '.data/', '.cache/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // Workflow code must stay deterministic: no I/O, no Node builtins, no database or HTTP code.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...builtinModules, ...builtinModules.map((m) => `node:${m}`)].map((name) => ({
            name,
            message: 'Workflows are deterministic: Node builtins belong in activities.',
          })),
          patterns: [
            {
              group: [
                'drizzle-orm',
                'drizzle-orm/*',
                'postgres',
                'hono',
                'hono/*',
                '@hono/*',
                'pino',
                '@temporalio/client',
                '@temporalio/worker',
                '@temporalio/activity',
                'jsonwebtoken',
                'jose',
              ],
              message: 'Workflows are deterministic: do I/O in activities.',
            },
            {
              group: ['**/db/client*', '**/db/repositories/*', '**/api/*', '**/activities/*'],
              allowTypeImports: true,
              message: 'Import activities and db code as types only.',
            },
          ],
        },
      ],
    },
  },
  {
    // The other way round: outside the sandbox only the workflows' contracts are imported
    // (messages, search attributes), never a workflow implementation.
    files: ['src/**/*.ts'],
    ignores: ['src/workflows/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/workflows/*',
                '!**/workflows/messages*',
                '!**/workflows/search-attributes*',
                '**/workflows/incident/*',
              ],
              allowTypeImports: true,
              message:
                'Talk to a workflow through src/workflows/messages.ts and the Temporal client, never its implementation.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { console: 'readonly', process: 'readonly', URL: 'readonly' },
    },
  },
);
