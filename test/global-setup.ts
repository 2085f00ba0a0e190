/**
 * Once per run of the integration project (vitest.config.ts; unit tests need none of it): a real
 * embedded PostgreSQL with a migrated template database, a real Temporal dev server, and one
 * workflow bundle (with tracing's workflow interceptors, as `npm run build:workflows` makes it). Each test file then makes its own database from the template and runs its own
 * worker on its own task queue.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { runMigrations } from '../src/db/client.js';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { workflowsPath } from '../src/temporal/incident-worker.js';
import { workflowInterceptorModules } from '../src/tracing/temporal.js';
import { findTemporalCli } from '../src/launcher/temporal-cli.js';
import { startDevServer } from '../src/temporal/dev-server.js';
import { freePort } from './helpers/ports.js';

export const TEMPLATE_DATABASE = 'iis_template';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    templateDatabase: string;
    temporalAddress: string;
    workflowBundlePath: string;
  }
}

/**
 * The embedded PostgreSQL on a free port. The port is free when picked but bound only later,
 * while the Temporal dev server starts beside it and binds ports of its own, so a start that
 * fails is retried on another port (it failed once in CI: "exited during start-up"). A last
 * failure carries PostgreSQL's own log lines.
 */
async function startTestPostgres(dataDir: string, log: (message: string) => void) {
  const lines: string[] = [];
  const keep = (message: string) => {
    lines.push(message);
    if (lines.length > 40) lines.shift();
    log(message);
  };
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEmbeddedPostgres({
        dataDir,
        port: await freePort(),
        databases: [TEMPLATE_DATABASE],
        log: keep,
      });
    } catch (err) {
      if (attempt === 3) throw new Error(`${String(err)}\n${lines.join('\n')}`);
      process.stderr.write(`${String(err)}; retrying on another port\n`);
    }
  }
}

export default async function setup(project: TestProject) {
  const root = mkdtempSync(path.join(tmpdir(), 'iis-test-'));
  chmodSync(root, 0o755); // the embedded PostgreSQL runs as its own user and must reach its folder
  const log = (message: string) => {
    if (process.env.TEST_VERBOSE) process.stderr.write(`${message}\n`);
  };
  const started = Date.now();
  const [pg, temporal, bundle] = await Promise.all([
    startTestPostgres(path.join(root, 'pg'), log),
    freePort().then(async (port) =>
      startDevServer({
        cliPath: (
          await findTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH, log: (m) => process.stderr.write(`${m}\n`) })
        ).path,
        port,
        namespace: 'default',
        logFile: path.join(root, 'temporal.log'),
        log,
      }),
    ),
    bundleWorkflowCode({
      workflowsPath,
      // As a production bundle (bundle-workflows.ts): tracing's workflow side, inert in untraced workflows.
      workflowInterceptorModules,
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },
    }),
  ]);
  await runMigrations(pg.url(TEMPLATE_DATABASE));
  const bundlePath = path.join(root, 'workflow-bundle.js');
  writeFileSync(bundlePath, bundle.code);
  log(`test infrastructure ready in ${Date.now() - started} ms`);

  project.provide('pgAdminUrl', pg.url('postgres'));
  project.provide('templateDatabase', TEMPLATE_DATABASE);
  project.provide('temporalAddress', temporal.address);
  project.provide('workflowBundlePath', bundlePath);

  return async () => {
    await temporal.stop();
    await pg.stop();
    rmSync(root, { recursive: true, force: true });
  };
}
