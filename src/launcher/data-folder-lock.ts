/**
 * One `npm start` per data folder. Each launcher announces itself with a file in
 * `DATA_DIR/launcher.lock/` naming it by pid, start time and boot id (from `/proc`): a pid alone
 * is no proof, a killed launcher's pid may be reused, and neither was the command line
 * (`tsx src/launcher/start.ts` holds the path relative, the launcher sees it absolute). It then looks for
 * other running launchers' files and goes on only if there is none: of two that announce at once,
 * the later one always sees the earlier, so at most one goes on: the one that announced first.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const LOCK_DIR = 'launcher.lock';

/** How long a launcher waits for later ones that announced at the same time to withdraw. */
const WAIT_MS = 5_000;

/** The folder is held by a running launcher, `pid`. */
export class DataDirInUse extends Error {
  constructor(
    readonly pid: number,
    dataDir: string,
  ) {
    super(
      `Another npm start (pid ${pid}) is running on ${dataDir}; stop it first (kill ${pid}), or set DATA_DIR to another folder`,
    );
  }
}

interface Launcher {
  pid: number;
  startTime: string;
  bootId: string;
  /** When it announced itself (ms since the epoch). */
  at: number;
}

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** When `pid` started, in clock ticks since boot (field 22 of `/proc/<pid>/stat`); undefined when it is gone. */
export function processStartTime(pid: number): string | undefined {
  const stat = readOrUndefined(`/proc/${pid}/stat`);
  // The command name (field 2) may hold spaces and parentheses: count the fields after the last ')'.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

const bootId = () => readOrUndefined('/proc/sys/kernel/random/boot_id')?.trim() ?? '-';

/** This process as its file names it; '-' for what this system does not tell. */
const me = (): Launcher => ({
  pid: process.pid,
  startTime: processStartTime(process.pid) ?? '-',
  bootId: bootId(),
  at: Date.now(),
});

/** The launcher a file names, while that very process runs (not one that reused its pid). */
function running(content: string): Launcher | undefined {
  const [pidText, startTime = '', boot = '', at] = content.trim().split(' ');
  const launcher = { pid: Number(pidText), startTime, bootId: boot, at: Number(at) };
  if (
    !Number.isSafeInteger(launcher.pid) ||
    launcher.pid < 2 ||
    !Number.isFinite(launcher.at) ||
    launcher.bootId !== bootId()
  )
    return undefined;
  const started = processStartTime(launcher.pid);
  if (started !== undefined) return started === startTime ? launcher : undefined;
  if (startTime !== '-') return undefined; // /proc is there and has no such process
  // Without /proc (not Linux) only whether the pid exists can be told.
  try {
    process.kill(launcher.pid, 0);
    return launcher;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? launcher : undefined;
  }
}

/** Whether `a` announced itself before `b` (the pid breaks a tie). */
const before = (a: Launcher, b: Launcher) => (a.at !== b.at ? a.at < b.at : a.pid < b.pid);

/** The running launchers announced in `dir` other than `own`; removes the files of gone ones. */
function others(dir: string, own: string): Launcher[] {
  const found: Launcher[] = [];
  for (const name of readdirSync(dir)) {
    if (name === own || name.startsWith('.')) continue; // ours, or one being written
    const file = path.join(dir, name);
    const content = readOrUndefined(file);
    if (content === undefined) continue; // withdrawn meanwhile
    const launcher = running(content);
    // A gone launcher's file: its name (pid and a random part) is never announced again.
    if (launcher) found.push(launcher);
    else rmSync(file, { force: true });
  }
  return found.sort((a, b) => (before(a, b) ? -1 : 1));
}

/**
 * Takes the data folder for this process, or throws DataDirInUse naming the launcher that runs on
 * it. Files of launchers that were killed are removed on the way. Answers the release.
 */
export async function claimDataDir(dataDir: string): Promise<() => void> {
  const dir = path.join(dataDir, LOCK_DIR);
  mkdirSync(dir, { recursive: true });
  const self = me();
  const name = `${process.pid}.${randomBytes(6).toString('hex')}`;
  const mine = path.join(dir, name);
  // Written whole, then renamed into place: nobody reads a half-written file as a gone launcher's.
  writeFileSync(path.join(dir, `.${name}`), `${self.pid} ${self.startTime} ${self.bootId} ${self.at}\n`);
  renameSync(path.join(dir, `.${name}`), mine);
  const release = () => rmSync(mine, { force: true });
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const live = others(dir, name);
    if (live.length === 0) return release;
    // One that announced earlier runs or is starting: it wins. Later ones withdraw when they
    // see this one; wait for that (a clock stepped back could make this wait for a running one).
    if (before(live[0]!, self) || Date.now() > deadline) {
      release();
      throw new DataDirInUse(live[0]!.pid, dataDir);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
