/**
 * Workflow unit tests on Temporal's time-skipping test server: the real workflow code, activities
 * given as plain functions, and durable timers that fire when the test skips time. No PostgreSQL,
 * no dev server, no global setup.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { customSearchAttributes } from '../../src/workflows/search-attributes.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The test server's launcher: TEMPORAL_TEST_SERVER_PATH, or the one `.ci/install-temporal-test-server`
 * keeps in .cache/ (it installs it the first time, from Maven Central, and answers at once after).
 */
export function testServerExecutable(): string {
  if (process.env.TEMPORAL_TEST_SERVER_PATH) return process.env.TEMPORAL_TEST_SERVER_PATH;
  const out = execFileSync(path.join(projectRoot, '.ci', 'install-temporal-test-server'), {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return out.trim().split('\n').at(-1)!;
}

/**
 * A time-skipping environment on the Java test server, with the workflows' search attributes
 * registered (it implements adding them, not listing them).
 */
export async function createTimeSkippingEnvironment(): Promise<TestWorkflowEnvironment> {
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServerExecutable() } },
  });
  try {
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(
        customSearchAttributes.map((key) => [
          key.name,
          proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
        ]),
      ),
    });
  } catch (err) {
    await env.teardown();
    throw err;
  }
  return env;
}

/** The workflow bundle every worker of a test file shares (bundling takes seconds, a worker none). */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: path.join(projectRoot, 'src', 'workflows', 'index.ts'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },
  });
}
