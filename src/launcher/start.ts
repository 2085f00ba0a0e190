// `npm start`: the whole service on one machine. Embedded PostgreSQL unless DATABASE_URL is set,
// a Temporal dev server (with its Web UI) unless TEMPORAL_ADDRESS is set, migrations, the worker,
// the api; seeds a demo tenant and prints where everything is. Ctrl-C stops it all.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { signToken } from '../auth/tokens.js';
import { connectDatabase, runMigrations } from '../db/client.js';
import { startEmbeddedPostgres } from '../db/embedded.js';
import { createTenant } from '../db/repositories/tenants.js';
import { tenants } from '../db/schema/tenants.js';
import { configOrExit, exitWith } from '../process-exit.js';
import { createLogger } from '../logger.js';
import { claimDataDir } from './data-folder-lock.js';
import { pidFromFile, removePidFile, stopLeftover } from './stale-processes.js';
import { assertPortFree } from './ports.js';
import { EMBEDDED_DATABASE, ensureGeneratedJwtSecret, ensureGeneratedSkillEncryptionKey } from '../runtime-settings.js';
import { startApi, startWorker, stopOnSignals, type Stoppable } from '../composition.js';
import { startDevServer } from '../temporal/dev-server.js';
import { findTemporalCli } from './temporal-cli.js';
import { writeToTerminalOnly } from './terminal-only.js';

const config = configOrExit();
const logger = createLogger(config.logLevel);
const say = (message: string) => process.stdout.write(`${message}\n`);
const parts: Stoppable[] = [];
const shuttingDown = stopOnSignals(parts, logger);

/** Bounds a stop so one stuck part cannot keep the others running. */
function bounded(name: string, stop: () => Promise<void>, ms = 15_000): Stoppable {
  return {
    stop: async () => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        stop(),
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            logger.warn({ part: name }, 'stop timed out');
            resolve();
          }, ms).unref();
        }),
      ]);
      clearTimeout(timer);
    },
  };
}

async function seedDemoTenant(databaseUrl: string) {
  const database = connectDatabase(databaseUrl, { max: 1 });
  try {
    const existing = await database.db.select().from(tenants).where(eq(tenants.slug, 'demo')).limit(1);
    return existing[0] ?? (await createTenant(database.db, { name: 'Demo', plan: 'plan_business' }));
  } finally {
    await database.close();
  }
}

async function main() {
  // One launcher per data folder (ADR 0245): a second one is refused before it touches
  // anything, so whatever runs on the folder's files below is a killed launcher's leftover.
  const releaseDataDir = await claimDataDir(config.dataDir);
  parts.push({ stop: async () => releaseDataDir() }); // stopped last
  const jwtSecret = config.auth.jwtSecret ?? ensureGeneratedJwtSecret(config.dataDir);
  const skillEncryptionKey = config.skills.encryptionKey ?? ensureGeneratedSkillEncryptionKey(config.dataDir);
  await assertPortFree(config.port, config.host, 'PORT');

  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    // An earlier start on this data folder that was killed left its PostgreSQL running.
    const databaseDir = path.join(config.dataDir, 'postgres');
    await stopLeftover({
      pid: pidFromFile(path.join(databaseDir, 'postmaster.pid')),
      mustInclude: ['-D', databaseDir],
      name: 'PostgreSQL',
      signal: 'SIGINT',
      log: say,
    });
    await assertPortFree(config.pgPort, '127.0.0.1', 'PG_PORT');
    say(`Starting PostgreSQL (embedded) on 127.0.0.1:${config.pgPort}, data in ${config.dataDir}`);
    const pg = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      port: config.pgPort,
      databases: [EMBEDDED_DATABASE],
      log: (m) => logger.debug({ component: 'postgres' }, m),
      // Nothing else would notice: every request would answer 503 for ever.
      supervise: {
        exited: ({ code, signal, restartInMs, lastLog }) =>
          logger.error({ code, signal, restartInMs, lastLog }, 'the embedded PostgreSQL exited; restarting it'),
        restarted: (pid) => logger.warn({ pid }, 'the embedded PostgreSQL was restarted'),
        shuttingDown,
      },
    });
    parts.push(bounded('postgres', pg.stop));
    databaseUrl = pg.url(EMBEDDED_DATABASE);
  }
  await runMigrations(databaseUrl);

  let temporalAddress = config.temporal.address;
  let temporalUi = 'the Temporal UI of your cluster';
  if (!temporalAddress) {
    const temporalDb = path.join(config.dataDir, 'temporal.sqlite');
    const temporalPidFile = path.join(config.dataDir, 'temporal.pid');
    await stopLeftover({
      pid: pidFromFile(temporalPidFile),
      mustInclude: ['start-dev', temporalDb],
      name: 'Temporal dev server',
      signal: 'SIGTERM',
      log: say,
    });
    await assertPortFree(config.temporal.port, '127.0.0.1', 'TEMPORAL_PORT');
    await assertPortFree(config.temporal.uiPort, '127.0.0.1', 'TEMPORAL_UI_PORT');
    const { path: cliPath } = await findTemporalCli({ cliPath: config.temporal.cliPath, log: say });
    say(`Starting the Temporal dev server on 127.0.0.1:${config.temporal.port}`);
    const server = await startDevServer({
      cliPath,
      port: config.temporal.port,
      uiPort: config.temporal.uiPort,
      dbFilename: temporalDb,
      namespace: config.temporal.namespace,
      logFile: path.join(config.dataDir, 'temporal.log'),
      log: say,
      // Nothing else would notice: the api and worker would wait for it for ever.
      supervise: {
        exited: ({ code, signal, restartInMs }) =>
          logger.error(
            { code, signal, restartInMs, log: path.join(config.dataDir, 'temporal.log') },
            'the Temporal dev server exited; restarting it',
          ),
        restarted: (pid) => {
          if (pid) writeFileSync(temporalPidFile, `${pid}\n`);
          logger.warn({ pid }, 'the Temporal dev server was restarted');
        },
        shuttingDown,
      },
    });
    if (server.pid) writeFileSync(temporalPidFile, `${server.pid}\n`);
    parts.push(
      bounded('temporal', async () => {
        await server.stop();
        removePidFile(temporalPidFile);
      }),
    );
    temporalAddress = server.address;
    temporalUi = server.uiUrl ?? temporalUi;
  }

  const settings = { databaseUrl, temporalAddress, jwtSecret, skillEncryptionKey };
  parts.push(bounded('worker', (await startWorker(config, settings, logger.child({ component: 'worker' }))).stop));
  const api = await startApi(config, settings, logger.child({ component: 'api' }));
  parts.push(bounded('api', api.stop));

  const tenant = await seedDemoTenant(databaseUrl);
  const token = signToken({
    secret: jwtSecret,
    tenantId: tenant.id,
    role: 'admin',
    sub: 'demo-admin',
    email: 'admin@demo.local',
    ttlSeconds: config.auth.tokenTtlSeconds,
  });
  const mintCommand = `npm run --silent cli -- token --tenant ${tenant.id} --role admin`;
  say(
    [
      '',
      'Incident investigation service is running.',
      `  API:          ${api.url}   (docs: ${api.url}/docs)`,
      `  Temporal UI:  ${temporalUi}   (namespace ${config.temporal.namespace})`,
      `  Demo tenant:  ${tenant.id}`,
    ].join('\n'),
  );
  // The token goes to the terminal only: stdout may be a log file (ADR 0281).
  const shown = writeToTerminalOnly(`  Admin token:  ${token}\n`);
  say(
    [
      ...(shown === 'tty' ? ['  Admin token:  printed to the terminal only'] : []),
      ...(shown === 'nowhere' ? [`  Admin token:  not printed (no terminal); mint one: ${mintCommand}`] : []),
      '',
      `  Try: curl -H "Authorization: Bearer <token>" ${api.url}/v1/incidents`,
      '  More tokens: npm run --silent cli -- token --tenant <tenantId> --role admin|member',
      '  Stop with Ctrl-C.',
      '',
    ].join('\n'),
  );
}

main().catch(async (err: unknown) => {
  for (const part of [...parts].reverse()) await part.stop().catch(() => undefined);
  exitWith(err);
});
