/**
 * `npm run eval:storm`: replays every storm scenario (test/storm/scenarios) through real webhooks,
 * each into a fresh tenant, and prints per scenario and overall the grouping's pairwise precision
 * and recall, incidents per outage, approvals requested and notifications per admin.
 *
 * By default it starts the service as `npm start` runs it (child process, temporary data folder,
 * free ports) and stops it after. `--url http://127.0.0.1:8080` uses a running `npm start` of this
 * checkout instead (its data folder's database and generated JWT secret, or DATABASE_URL and
 * JWT_SECRET), adding tenants to it. Options: `--scenario a,b` (names), `--speed N` (default 10:
 * a scenario's minutes replayed ten times faster, payload times unchanged), `--settle SECONDS`
 * (default 120: the longest wait for triage and investigations after the last delivery), `--verbose`
 * (each incident's alerts, their truth and why they were grouped).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startStack, type Stack } from '../../bench/stack.js';
import { loadConfig } from '../../src/config.js';
import { resolveDatabaseUrl, resolveJwtSecret } from '../../src/runtime-settings.js';
import { formatGroups, formatOverall, formatScenario } from './report.js';
import { replayScenario, type ScenarioResult } from './replay.js';
import { scenarios } from './scenarios/index.js';
import { targetOver } from './target.js';

async function main() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      scenario: { type: 'string' },
      speed: { type: 'string', default: '10' },
      settle: { type: 'string', default: '120' },
      verbose: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const wanted = values.scenario?.split(',').map((name) => name.trim());
  const chosen = wanted ? scenarios.filter((s) => wanted.includes(s.name)) : scenarios;
  if (wanted && chosen.length !== wanted.length)
    throw new Error(`unknown scenario; known: ${scenarios.map((s) => s.name).join(', ')}`);

  let stack: Stack | undefined;
  let baseUrl: string;
  let databaseUrl: string;
  let jwtSecret: string;
  if (values.url) {
    const config = loadConfig(process.env);
    baseUrl = values.url.replace(/\/$/, '');
    databaseUrl = resolveDatabaseUrl(config);
    jwtSecret = resolveJwtSecret(config) ?? '';
    if (!jwtSecret) throw new Error('no JWT secret: set JWT_SECRET, or run against npm start of this checkout');
  } else {
    console.log('starting the service as npm start runs it…');
    stack = await startStack({ WEBHOOK_RATE_LIMIT_PER_MINUTE: '100000000' });
    baseUrl = stack.baseUrl;
    databaseUrl = stack.databaseUrl;
    jwtSecret = readFileSync(path.join(stack.dataDir, 'jwt-secret'), 'utf8').trim();
  }
  const { target, close } = targetOver(baseUrl, databaseUrl, jwtSecret);
  const results: ScenarioResult[] = [];
  try {
    for (const definition of chosen) {
      const result = await replayScenario(target, definition, {
        speed: Number(values.speed),
        settleMs: Number(values.settle) * 1000,
        log: (line) => console.log(line),
      });
      console.log(formatScenario(result));
      if (values.verbose) console.log(formatGroups(result));
      results.push(result);
    }
    console.log(formatOverall(results));
  } finally {
    await close();
    await stack?.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
