// Entry: the api alone (DATABASE_URL and TEMPORAL_ADDRESS, or a running `npm start`).
import { configOrExit, exitWith } from '../entry.js';
import { createLogger } from '../logger.js';
import { resolveRuntimeSettings } from '../runtime.js';
import { startApi, stopOnSignals } from '../services.js';

const config = configOrExit();
const logger = createLogger(config.logLevel, { component: 'api' });
try {
  const api = await startApi(config, resolveRuntimeSettings(config), logger);
  logger.info({ url: api.url }, 'api listening');
  stopOnSignals([api], logger);
} catch (err) {
  exitWith(err);
}
