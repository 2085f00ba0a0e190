// `npm run temporal:cli`: finds the Temporal CLI the way `npm start` does (ADR 0281), so a fresh
// machine (CI) pays the one-time `go install` before the test run starts.
import { spawnSync } from 'node:child_process';
import { findTemporalCli } from '../launcher/temporal-cli.js';

const say = (m: string) => process.stdout.write(`${m}\n`);

findTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH, log: say }).then(
  (found) => {
    if (!found.path) {
      say('No Temporal CLI installed: the Temporal SDK downloads one at start.');
      return;
    }
    const version = spawnSync(found.path, ['--version'], { encoding: 'utf8' });
    say(`Temporal CLI (${found.source}): ${found.path} (${version.stdout.trim() || 'version unknown'})`);
  },
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
