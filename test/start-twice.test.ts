/**
 * `npm start` twice on one data folder, run as an operator runs it: `npm start`, so the launcher
 * is `tsx src/start.ts` with the path relative. The second is refused, naming the running one's
 * pid, and the running one keeps its PostgreSQL and Temporal dev server (decision 245).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../src/config.js';
import { LOCK_DIR } from '../src/launcher/data-folder-lock.js';
import { isRunning, pidFromFile } from '../src/launcher/stale-processes.js';
import { freePort } from './helpers/ports.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'iis-start-twice-'));
const postmasterPidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
const temporalPidFile = path.join(dataDir, 'temporal.pid');
const children: ChildProcess[] = [];

afterAll(() => {
  // Whatever a failed run left: each `npm start` runs in a process group of its own.
  for (const child of children) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  for (const file of [postmasterPidFile, temporalPidFile]) {
    const pid = pidFromFile(file);
    if (pid !== undefined && isRunning(pid, [dataDir])) process.kill(pid, 'SIGKILL');
  }
  rmSync(dataDir, { recursive: true, force: true });
});

async function freePorts(): Promise<Record<string, string>> {
  const names = ['PORT', 'PG_PORT', 'TEMPORAL_PORT', 'TEMPORAL_UI_PORT'];
  return Object.fromEntries(await Promise.all(names.map(async (name) => [name, String(await freePort())])));
}

/**
 * `npm start` in the project on this test's data folder; `settled` resolves with its exit code,
 * or with 'ready' once it printed its banner.
 */
function npmStart(ports: Record<string, string>) {
  const child = spawn('npm', ['start'], {
    cwd: projectRoot,
    env: { ...process.env, ...ports, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  children.push(child);
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const settled = new Promise<number | null | 'ready'>((resolve) => {
    const read = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Stop with Ctrl-C.')) resolve('ready');
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    void exited.then(resolve);
  });
  return { child, settled, exited, output: () => out };
}

describe('a second npm start on a data folder in use', () => {
  it('is refused naming the running one, which keeps its api, PostgreSQL and Temporal', async () => {
    const firstPorts = await freePorts();
    const first = npmStart(firstPorts);
    expect(await first.settled).toBe('ready');
    const api = `http://127.0.0.1:${firstPorts.PORT}`;
    const [claim] = readdirSync(path.join(dataDir, LOCK_DIR));
    const launcherPid = Number(readFileSync(path.join(dataDir, LOCK_DIR, claim!), 'utf8').split(' ')[0]);
    // npm runs the launcher as `tsx src/start.ts`: the relative path is what tripped the old check.
    expect(readFileSync(`/proc/${launcherPid}/cmdline`, 'utf8').split('\0')).toContain('src/launcher/start.ts');
    const postgresPid = pidFromFile(postmasterPidFile)!;
    const temporalPid = pidFromFile(temporalPidFile)!;

    // Other ports, as a second copy would be given: only the data folder is shared.
    const second = npmStart(await freePorts());
    const outcome = await Promise.race([
      second.settled,
      new Promise((r) => setTimeout(() => r('still running after 90 s'), 90_000)),
    ]);
    expect(outcome).toBe(1);
    expect(second.output()).toContain(`Another npm start (pid ${launcherPid}) is running on ${dataDir}`);

    // The first one is untouched: the same PostgreSQL and Temporal, and its api answers.
    expect(isRunning(postgresPid, [dataDir])).toBe(true);
    expect(isRunning(temporalPid, ['start-dev', dataDir])).toBe(true);
    expect(pidFromFile(postmasterPidFile)).toBe(postgresPid);
    const health = await fetch(`${api}/health`);
    expect(health.status).toBe(200);
    const detailed = await fetch(`${api}/health/detailed`);
    expect(await detailed.json()).toMatchObject({ checks: { postgres: { ok: true }, temporal: { ok: true } } });
    expect(first.output()).not.toMatch(/restart/);

    // The pid the refusal named is the one to stop: it takes everything with it and frees the folder.
    process.kill(launcherPid, 'SIGTERM');
    expect(await first.exited).toBe(0);
    expect(isRunning(postgresPid, [dataDir])).toBe(false);
    expect(isRunning(temporalPid, ['start-dev'])).toBe(false);
    expect(readdirSync(path.join(dataDir, LOCK_DIR))).toEqual([]);
  }, 240_000);
});
