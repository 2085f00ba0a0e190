/**
 * A worker in its own process, for crash tests: it runs the real activities until the parent
 * kills it with SIGKILL, so nothing is reported to Temporal: a real crash.
 * Env: DATABASE_URL, TEMPORAL_ADDRESS, TASK_QUEUE, WORKFLOW_BUNDLE, and optionally
 * - EXPORT_DIR, HEARTBEAT_TIMEOUT_MS, BATCH_ROWS and HANG_AFTER_ROWS: an export stops making
 *   progress once it has written HANG_AFTER_ROWS rows (it prints `HUNG <progress>`);
 * - LLM_BASE_URL: the OpenAI-compatible model behind triage and synthesis.
 */
import { randomBytes } from 'node:crypto';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities/index.js';
import { createOpenAiCompatibleProvider } from '../../src/analysis/providers.js';
import { connectDatabase } from '../../src/db/client.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import { createSkillRuntime } from '../../src/skills/invoke.js';
import { incidentWorkerInterceptors } from '../../src/temporal/incident-worker.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

Runtime.install({ logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } as never });
const database = connectDatabase(env('DATABASE_URL'), { max: 4 });
const hangAfter = Number(process.env.HANG_AFTER_ROWS ?? Infinity);
const activities = createActivities({
  db: database.db,
  skills: createSkillRuntime({ cipher: createSkillCipher(randomBytes(32)), allowedNetworks: [] }),
  ...(process.env.LLM_BASE_URL
    ? {
        model: createOpenAiCompatibleProvider({
          baseUrl: process.env.LLM_BASE_URL,
          model: 'fake-gpt-1',
          timeoutMs: 50_000,
          costPer1kTokens: 0,
        }),
      }
    : {}),
  ...(process.env.EXPORT_DIR
    ? {
        exports: {
          exportDir: process.env.EXPORT_DIR,
          heartbeatTimeoutMs: Number(env('HEARTBEAT_TIMEOUT_MS')),
          batchRows: Number(env('BATCH_ROWS')),
          onProgress: async (_exportId: string, progress: { rows: number }) => {
            if (progress.rows < hangAfter) return;
            process.stdout.write(`HUNG ${JSON.stringify(progress)}\n`);
            await new Promise(() => undefined); // never returns: the parent kills this process
          },
        },
      }
    : {}),
});
const worker = await Worker.create({
  connection: await NativeConnection.connect({ address: env('TEMPORAL_ADDRESS') }),
  namespace: 'default',
  taskQueue: env('TASK_QUEUE'),
  workflowBundle: { codePath: env('WORKFLOW_BUNDLE') },
  activities,
  interceptors: incidentWorkerInterceptors,
});
process.stdout.write('READY\n');
await worker.run();
