/**
 * A worker in its own process, for the export crash test: it runs the real activities and, once
 * an export has written `HANG_AFTER_ROWS` rows, stops making progress (the parent then kills it
 * with SIGKILL, so nothing is reported to Temporal: a real crash).
 * Env: DATABASE_URL, TEMPORAL_ADDRESS, TASK_QUEUE, WORKFLOW_BUNDLE, EXPORT_DIR, HEARTBEAT_TIMEOUT_MS,
 * BATCH_ROWS, HANG_AFTER_ROWS.
 */
import { randomBytes } from 'node:crypto';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities/index.js';
import { connectDatabase } from '../../src/db/client.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import { createSkillRuntime } from '../../src/skills/invoke.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

Runtime.install({ logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } as never });
const database = connectDatabase(env('DATABASE_URL'), { max: 4 });
const hangAfter = Number(env('HANG_AFTER_ROWS'));
const activities = createActivities({
  db: database.db,
  skills: createSkillRuntime({ cipher: createSkillCipher(randomBytes(32)), allowedNetworks: [] }),
  exports: {
    exportDir: env('EXPORT_DIR'),
    heartbeatTimeoutMs: Number(env('HEARTBEAT_TIMEOUT_MS')),
    batchRows: Number(env('BATCH_ROWS')),
    onProgress: async (_exportId, progress) => {
      if (progress.rows < hangAfter) return;
      process.stdout.write(`HUNG ${JSON.stringify(progress)}\n`);
      await new Promise(() => undefined); // never returns: the parent kills this process
    },
  },
});
const worker = await Worker.create({
  connection: await NativeConnection.connect({ address: env('TEMPORAL_ADDRESS') }),
  namespace: 'default',
  taskQueue: env('TASK_QUEUE'),
  workflowBundle: { codePath: env('WORKFLOW_BUNDLE') },
  activities,
});
process.stdout.write('READY\n');
await worker.run();
