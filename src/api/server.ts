// Entry: the api alone (DATABASE_URL and TEMPORAL_ADDRESS, or a running `npm start`).
import { configOrExit, exitWith } from '../process-exit.js';
import { createLogger } from '../logger.js';
import { resolveRuntimeSettings } from '../runtime-settings.js';
import { startApi, stopOnSignals } from '../composition.js';

const config = configOrExit();
const logger = createLogger(config.logLevel, { component: 'api' });
try {
  const api = await startApi(config, resolveRuntimeSettings(config), logger);
  logger.info({ url: api.url }, 'api listening');
  stopOnSignals([api], logger);
} catch (err) {
  exitWith(err);
}
