// `npm run temporal:cli`: finds or builds the Temporal CLI the way `npm start` and the tests do,
// so a fresh machine (CI) pays the one-time `go install` before the test run starts.
import { spawnSync } from 'node:child_process';
import { resolveTemporalCli } from './dev-server.js';

const found = resolveTemporalCli({
  cliPath: process.env.TEMPORAL_CLI_PATH,
  log: (m) => process.stdout.write(`${m}\n`),
});
if (!found) {
  process.stdout.write('No Temporal CLI and no Go toolchain: the Temporal SDK download will be used at start.\n');
} else {
  const version = spawnSync(found, ['--version'], { encoding: 'utf8' });
  process.stdout.write(`Temporal CLI: ${found} (${version.stdout.trim() || 'version unknown'})\n`);
}
