// Entry: the Temporal worker alone (runs the workflows, the activities and the reconciler).
import { configOrExit, exitWith } from '../entry.js';
import { createLogger } from '../logger.js';
import { resolveRuntimeSettings } from '../runtime.js';
import { startWorker, stopOnSignals } from '../services.js';

const config = configOrExit();
const logger = createLogger(config.logLevel, { component: 'worker' });
try {
  const worker = await startWorker(config, resolveRuntimeSettings(config), logger);
  logger.info({ taskQueue: config.temporal.taskQueue }, 'worker running');
  stopOnSignals([worker], logger);
} catch (err) {
  exitWith(err);
}
