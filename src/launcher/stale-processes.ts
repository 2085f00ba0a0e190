import { readFileSync, rmSync } from 'node:fs';

type Log = (message: string) => void;

/** The command line of a running process (Linux `/proc`); undefined when it is gone or unreadable. */
function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return undefined;
  }
}

/** Whether `pid` runs a command whose line holds every one of `parts` (false without `/proc`). */
export function isRunning(pid: number, parts: string[]): boolean {
  const command = commandLine(pid);
  return !!command && parts.every((part) => command.includes(part));
}

/** The process id on the first line of `file` (a PostgreSQL `postmaster.pid`, our `temporal.pid`). */
export function pidFromFile(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]!.trim());
    return Number.isSafeInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stops a process that an earlier `npm start` on the same data folder started and could not stop
 * because it was killed (SIGKILL, out of memory): the embedded PostgreSQL or the Temporal dev
 * server, left running and holding their ports, so a restart would refuse to start. Only a
 * process whose command line names this data folder's files (`mustInclude`) is touched, never an
 * unrelated one that reused the pid. It gets `signal` (a clean shutdown), then SIGKILL after
 * `timeoutMs`. Resolves once it is gone; does nothing without `/proc` (not Linux).
 */
export async function stopLeftover(options: {
  pid: number | undefined;
  mustInclude: string[];
  name: string;
  signal: NodeJS.Signals;
  log: Log;
  timeoutMs?: number;
}): Promise<boolean> {
  const { pid } = options;
  if (pid === undefined || pid === process.pid || !isRunning(pid, options.mustInclude)) return false;
  options.log(`Stopping the ${options.name} left running by an earlier start that was killed (pid ${pid})`);
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // Gone meanwhile.
    }
  };
  signal(options.signal);
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  // A zombie (gone, not yet reaped) has an empty command line.
  while (commandLine(pid)) {
    if (Date.now() > deadline) {
      signal('SIGKILL');
      await new Promise((r) => setTimeout(r, 200));
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** Removes a pid file, if any. */
export function removePidFile(file: string): void {
  rmSync(file, { force: true });
}
