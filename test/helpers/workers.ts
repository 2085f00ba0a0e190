/**
 * A worker a test starts and stops itself, on the test service's task queue, with the real
 * activities and any of them replaced (to hang, to be killed mid-way): for crash and
 * restart tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, inject } from 'vitest';
import { createActivities, type ActivityDeps } from '../../src/activities/index.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import { createSkillRuntime } from '../../src/skills/invoke.js';
import { findTemporalCli } from '../../src/launcher/temporal-cli.js';
import { startDevServer, type RunningDevServer } from '../../src/temporal/dev-server.js';
import { incidentWorkerInterceptors } from '../../src/temporal/incident-worker.js';
import { freePort } from './ports.js';
import { eventually } from './webhooks.js';
import { startTestService, type TestService, type TestServiceOptions } from './service.js';

/**
 * A Temporal dev server of its own that suggests continuing as new after ten history events, so
 * an incident's workflow runs its whole life with the suggestion on.
 */
export async function startContinueAsNewServer(): Promise<RunningDevServer> {
  return startDevServer({
    cliPath: (await findTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH, log: () => undefined })).path,
    port: await freePort(),
    namespace: 'default',
    log: () => undefined,
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 10 },
  });
}

type Activities = ReturnType<typeof createActivities>;

/**
 * `overrides` replace activities by name; given as a function, it receives the real ones, so an
 * override can hold or observe a call and then run the real activity.
 */
export async function startTestWorker(
  svc: TestService,
  connection: NativeConnection,
  overrides: Record<string, unknown> | ((real: Activities) => Record<string, unknown>) = {},
  options: { exports?: Partial<NonNullable<ActivityDeps['exports']>>; model?: ActivityDeps['model'] } = {},
) {
  const activities = createActivities({
    db: svc.database.db,
    skills: createSkillRuntime({ cipher: createSkillCipher(randomBytes(32)), allowedNetworks: [] }),
    exports: { ...svc.exportSettings, ...options.exports },
    ...(options.model ? { model: options.model } : {}),
  });
  const worker = await Worker.create({
    connection,
    namespace: 'default',
    taskQueue: svc.taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: { ...activities, ...(typeof overrides === 'function' ? overrides(activities) : overrides) },
    interceptors: incidentWorkerInterceptors,
    shutdownGraceTime: '100 milliseconds',
  });
  const running = worker.run();
  return {
    worker,
    activities,
    /** Shuts the worker down (in-flight activities are cut off) and waits until it has stopped. */
    async stop() {
      worker.shutdown();
      await running;
    },
  };
}

/**
 * For crash and restart tests: registers the file's hooks for a test service with no worker and
 * no dispatcher of its own, and a connection for the workers its tests start and stop. The
 * fields are set once `beforeAll` has run.
 */
export function useWorkerlessService(options: TestServiceOptions = {}): {
  svc: TestService;
  connection: NativeConnection;
} {
  const env = {} as { svc: TestService; connection: NativeConnection };
  beforeAll(async () => {
    env.svc = await startTestService({ ...options, withoutWorker: true, withoutDispatcher: true });
    env.connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await env.connection?.close();
    await env.svc?.stop();
  });
  return env;
}

/**
 * A worker in a process of its own (test/helpers/worker-process.ts) on the test service's task
 * queue, for tests that kill it with SIGKILL; `env` adds its options. Resolves once it polls;
 * `lines` collects what it prints.
 */
export async function startWorkerProcess(
  svc: TestService,
  env: Record<string, string>,
  lines: string[],
): Promise<ChildProcess> {
  const options = svc.database.sql.options as unknown as {
    host: string[];
    port: number[];
    database: string;
    user: string;
    pass: string | null;
  };
  const url = `postgres://${encodeURIComponent(options.user)}${options.pass ? `:${encodeURIComponent(options.pass)}` : ''}@${options.host[0]}:${options.port[0]}/${options.database}`;
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'worker-process.ts');
  const proc = spawn(process.execPath, ['--import', 'tsx', script], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TASK_QUEUE: svc.taskQueue,
      WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let buffered = '';
  proc.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
  });
  await eventually(
    async () =>
      lines.includes('READY') ||
      (proc.exitCode !== null ? Promise.reject(new Error(`worker process exited ${proc.exitCode}`)) : false),
    30_000,
  );
  return proc;
}
