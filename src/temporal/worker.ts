// Entry: the Temporal worker alone (runs the workflows, the activities and the reconciler).
import { configOrExit, exitWith } from '../process-exit.js';
import { createLogger } from '../logger.js';
import { resolveRuntimeSettings } from '../runtime-settings.js';
import { startWorker, stopOnSignals } from '../composition.js';

const config = configOrExit();
const logger = createLogger(config.logLevel, { component: 'worker' });
try {
  const worker = await startWorker(config, resolveRuntimeSettings(config), logger);
  logger.info({ taskQueue: config.temporal.taskQueue }, 'worker running');
  stopOnSignals([worker], logger);
} catch (err) {
  exitWith(err);
}
