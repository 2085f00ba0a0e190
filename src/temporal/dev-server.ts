import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { restartDelays, type Supervision } from '../launcher/supervision.js';
import { projectRoot } from '../config.js';
import { customSearchAttributes } from '../workflows/search-attributes.js';

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
export const temporalCacheDir = path.join(projectRoot, '.cache', 'temporal');

type Log = (message: string) => void;

export interface DevServerOptions {
  cliPath: string | null;
  port: number;
  uiPort?: number;
  /** SQLite file that keeps state across restarts; in memory when omitted. */
  dbFilename?: string;
  namespace: string;
  logFile?: string;
  log: Log;
  /** Server dynamic configuration (`--dynamic-config-value key=<JSON>`), e.g. a lower history limit for a test. */
  dynamicConfig?: Record<string, unknown>;
  /**
   * Restart the server when it exits on its own: after 1 s, doubling to 30 s
   * while it keeps exiting within a minute of its start. `exited` is told before each restart,
   * `restarted` after it, with the new process id. No restart once `shuttingDown()` is true: a
   * terminal's Ctrl-C stops the server before the launcher does.
   */
  supervise?: Supervision;
}

export interface RunningDevServer {
  address: string;
  uiUrl: string | null;
  /** The server process (none when the SDK's download runs it). */
  pid: number | undefined;
  stop(): Promise<void>;
}

/** The server process ended before it served: worth another launch (CI saw a start-up exit 2 once). */
class StartupExit extends Error {}

async function waitForServer(address: string, namespace: string, child: Launched | null, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child && child.server.exitCode !== null) {
      const output = child.outputTail().trim();
      throw new StartupExit(
        `the Temporal dev server exited with code ${child.server.exitCode} during start-up${output ? `: ${output}` : ''}`,
      );
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`the Temporal dev server did not become ready at ${address}: ${String(lastError)}`);
}

interface Launched {
  server: ChildProcess;
  exited: Promise<void>;
  /** The end of what the process wrote, for an error message when no log file keeps it. */
  outputTail(): string;
}

const START_ATTEMPTS = 3;
const OUTPUT_TAIL_BYTES = 2048;

/** Starts `temporal server start-dev` with our search attributes, and waits until it serves. */
export async function startDevServer(options: DevServerOptions): Promise<RunningDevServer> {
  const address = `127.0.0.1:${options.port}`;
  const searchAttributeArgs = customSearchAttributes.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]);
  const dynamicConfigArgs = Object.entries(options.dynamicConfig ?? {}).flatMap(([key, value]) => [
    '--dynamic-config-value',
    `${key}=${JSON.stringify(value)}`,
  ]);
  if (!options.cliPath) {
    const { TestWorkflowEnvironment } = await import('@temporalio/testing');
    options.log('No Temporal CLI found and Go is not installed: using the Temporal SDK download.');
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        ip: '127.0.0.1',
        port: options.port,
        namespace: options.namespace,
        ...(options.uiPort ? { ui: true, uiPort: options.uiPort } : {}),
        ...(options.dbFilename ? { dbFilename: options.dbFilename } : {}),
        searchAttributes: [...customSearchAttributes],
        extraArgs: dynamicConfigArgs,
      },
    });
    return {
      address,
      uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : null,
      pid: undefined,
      stop: () => env.teardown(),
    };
  }
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--namespace',
    options.namespace,
    '--log-level',
    'warn',
    ...searchAttributeArgs,
    ...dynamicConfigArgs,
    ...(options.uiPort ? ['--ui-port', String(options.uiPort)] : ['--headless']),
    // A file database in write-ahead-log mode, synced at checkpoints rather than on every commit:
    // about three times the workflow rate of SQLite's default rollback journal on this machine
    // (52 against 18 bare workflows/s), and still safe against a crash of the server process.
    ...(options.dbFilename
      ? [
          '--db-filename',
          options.dbFilename,
          '--sqlite-pragma',
          'journal_mode=wal',
          '--sqlite-pragma',
          'synchronous=normal',
        ]
      : []),
  ];
  if (options.dbFilename) mkdirSync(path.dirname(options.dbFilename), { recursive: true });
  const out = options.logFile ? openSync(options.logFile, 'a') : 'pipe';
  const cliPath = options.cliPath;
  const launch = (): Launched => {
    const server = spawn(cliPath, args, { stdio: ['ignore', out, out] });
    let tail = '';
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_BYTES);
    };
    server.stdout?.on('data', keep);
    server.stderr?.on('data', keep);
    return {
      server,
      exited: new Promise<void>((resolve) => server.once('exit', () => resolve())),
      outputTail: () => tail,
    };
  };
  let child = launch();
  for (let attempt = 1; ; attempt++) {
    try {
      await waitForServer(address, options.namespace, child, 60_000);
      break;
    } catch (err) {
      child.server.kill('SIGKILL');
      if (!(err instanceof StartupExit)) throw err;
      if (attempt >= START_ATTEMPTS)
        throw new Error(err.message.replace(' during start-up', ` during start-up (${attempt} launches)`));
      options.log(`${err.message}; starting it again (launch ${attempt + 1} of ${START_ATTEMPTS})`);
      await child.exited;
      child = launch();
    }
  }
  let stopping = false;
  let restart: NodeJS.Timeout | undefined;
  const supervise = options.supervise;
  if (supervise) {
    const nextDelay = restartDelays();
    const watch = (current: ChildProcess, startedAt: number) => {
      current.once('exit', (code, signal) => {
        if (stopping || supervise.shuttingDown()) return;
        const delay = nextDelay(Date.now() - startedAt);
        supervise.exited({ code, signal, restartInMs: delay });
        restart = setTimeout(() => {
          if (stopping || supervise.shuttingDown()) return;
          child = launch();
          supervise.restarted(child.server.pid);
          watch(child.server, Date.now());
        }, delay);
      });
    };
    watch(child.server, Date.now());
  }
  return {
    address,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : null,
    get pid() {
      return child.server.pid;
    },
    async stop() {
      stopping = true;
      clearTimeout(restart);
      const { server, exited } = child;
      if (server.exitCode !== null || server.signalCode !== null) return;
      server.kill('SIGTERM');
      const timer = setTimeout(() => server.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
