// Entry: applies the committed migrations to DATABASE_URL (a one-shot job in docker-compose).
import { configOrExit, exitWith } from '../process-exit.js';
import { resolveDatabaseUrl } from '../runtime-settings.js';
import { runMigrations } from './client.js';

const config = configOrExit();
try {
  await runMigrations(resolveDatabaseUrl(config));
  process.stdout.write('migrations applied\n');
} catch (err) {
  exitWith(err);
}
