import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Unit tests need no service: pure functions, activities as functions, and workflows on a
 * time-skipping test server of their own. Everything else is an integration test (the default
 * for a new file), run against the real PostgreSQL and Temporal dev server of test/global-setup.ts.
 */
const unit = [
  'test/unit/**/*.test.ts',
  'test/activities/patterns.test.ts',
  'test/analysis/investigation.test.ts',
  'test/analysis/mechanisms.test.ts',
  'test/analysis/mechanisms-infra.test.ts',
  'test/investigation-corpus/grade.test.ts',
  'test/analysis/providers.test.ts',
  'test/api/drain.test.ts',
  'test/auth/webhook-signatures.test.ts',
  'test/config.test.ts',
  'test/domain/*.test.ts',
  'test/ingest/providers.test.ts',
  'test/ingest/provider-markers.test.ts',
  'test/ingest/change-sources-rules.test.ts',
  'test/ingest/attribution.test.ts',
  'test/storm/scenarios.test.ts',
  'test/launcher-lock.test.ts',
  'test/memory/intents.test.ts',
  'test/memory/provider.test.ts',
  'test/skills/agent-skills.test.ts',
  'test/skills/json-schema.test.ts',
  'test/skills/secrets-and-networks.test.ts',
];

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    teardownTimeout: 60_000,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: unit, testTimeout: 30_000, hookTimeout: 120_000 },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...unit],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
