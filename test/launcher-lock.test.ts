/**
 * The data folder's lock (src/launcher-lock.ts, decision 245), held by real processes: refused
 * while its launcher runs, taken over once that one was killed or its pid reused, and won by one
 * start only when several start at once.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../src/config.js';
import { claimDataDir, LOCK_DIR, processStartTime } from '../src/launcher/data-folder-lock.js';

const dirs: string[] = [];
const children: number[] = [];
afterAll(() => {
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const dataDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'iis-lock-'));
  dirs.push(dir);
  return dir;
};
const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
const moduleUrl = pathToFileURL(path.join(projectRoot, 'src/launcher/data-folder-lock.ts')).href;
const claims = (dir: string) => readdirSync(path.join(dir, LOCK_DIR));

/** Leaves the file a launcher announced itself with, as one that is gone leaves it. */
function announced(dir: string, name: string, content: string): void {
  mkdirSync(path.join(dir, LOCK_DIR), { recursive: true });
  writeFileSync(path.join(dir, LOCK_DIR, name), content);
}

/**
 * A process that claims each of `dirs` in turn, the first at the time `at` and the next every
 * 200 ms (so several can race), prints the outcomes as one JSON line and stays `holdMs`. With
 * `slowMs`, each read of the lock folder takes that much longer (a slow disk), which widens
 * every window between looking and acting. Resolves with its pid and the outcomes.
 */
function claimer(
  dirs: string[],
  options: { at: number; holdMs: number; slowMs?: number },
): Promise<{ pid: number; said: string[] }> {
  const script = `
    const fs = require('node:fs');
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (const name of ['readFileSync', 'readdirSync']) {
      const real = fs[name];
      fs[name] = function (file, ...rest) {
        const out = real.call(this, file, ...rest);
        if (String(file).includes(${JSON.stringify(LOCK_DIR)})) Atomics.wait(pause, 0, 0, ${options.slowMs ?? 0});
        return out;
      };
    }
    require('node:module').syncBuiltinESMExports();
    import(${JSON.stringify(moduleUrl)}).then(async ({ claimDataDir }) => {
      const said = [];
      for (const [i, dir] of ${JSON.stringify(dirs)}.entries()) {
        while (Date.now() < ${options.at} + i * 200);
        said.push(await claimDataDir(dir).then(() => 'claimed', (err) => 'refused: ' + err.message));
      }
      console.log(JSON.stringify(said));
      setTimeout(() => undefined, ${options.holdMs});
    });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child.pid!);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve({ pid: child.pid!, said: JSON.parse(out) as string[] });
    });
    child.once('exit', (code) => reject(new Error(`the claimer exited with ${code}: ${out}`)));
  });
}

describe('the data folder lock', () => {
  it('refuses a claim naming the running launcher, and is taken over once that one was killed', async () => {
    const dir = dataDir();
    const holder = await claimer([dir], { at: 0, holdMs: 60_000 });
    expect(holder.said).toEqual(['claimed']);
    await expect(claimDataDir(dir)).rejects.toThrow(`Another npm start (pid ${holder.pid}) is running on ${dir}`);
    expect(claims(dir)).toHaveLength(1); // the refused one withdrew
    // The holder as its file names it: pid, start time, boot id, when it announced itself.
    expect(readFileSync(path.join(dir, LOCK_DIR, claims(dir)[0]!), 'utf8')).toMatch(
      new RegExp(`^${holder.pid} ${processStartTime(holder.pid)} ${bootId} \\d+\n$`),
    );

    process.kill(holder.pid, 'SIGKILL');
    while (processStartTime(holder.pid) !== undefined) await new Promise((r) => setTimeout(r, 50));
    const release = await claimDataDir(dir);
    expect(claims(dir).map((name) => name.split('.')[0])).toEqual([String(process.pid)]); // the killed one's file is gone
    release();
    expect(claims(dir)).toEqual([]);
  }, 30_000);

  it('takes over from a launcher whose pid now belongs to another process, or that ran before a reboot', async () => {
    const dir = dataDir();
    // This very process, as a file names it: refused.
    announced(dir, 'live', `${process.pid} ${processStartTime(process.pid)} ${bootId} 0\n`);
    await expect(claimDataDir(dir)).rejects.toThrow(`(pid ${process.pid})`);
    rmSync(path.join(dir, LOCK_DIR, 'live'));
    // The same pid started at another time (a killed launcher's pid, reused), the same process
    // identity from an earlier boot, a pid that is gone, and a file that names nothing.
    announced(dir, 'reused', `${process.pid} 1 ${bootId} 0\n`);
    announced(dir, 'rebooted', `${process.pid} ${processStartTime(process.pid)} another-boot 0\n`);
    announced(dir, 'gone', `999999 1 ${bootId} 0\n`);
    announced(dir, 'garbage', 'not a launcher');
    const release = await claimDataDir(dir);
    expect(claims(dir)).toHaveLength(1);
    release();
  });

  it('lets exactly one of several starts at the same moment take the folder, on a slow disk too', async () => {
    // Ten rounds of four racers, each on a folder a killed launcher left; a read of the lock
    // folder takes 5 ms longer.
    const folders = Array.from({ length: 10 }, () => {
      const dir = dataDir();
      announced(dir, 'killed', `999999 1 ${bootId} 0\n`);
      return dir;
    });
    const racers = await Promise.all(
      Array.from({ length: 4 }, () => claimer(folders, { at: Date.now() + 5_000, holdMs: 60_000, slowMs: 5 })),
    );
    const pids = racers.map((r) => r.pid);
    folders.forEach((dir, round) => {
      const winners = racers.filter((r) => r.said[round] === 'claimed');
      expect(winners, `round ${round}: ${racers.map((r) => r.said[round]).join(' | ')}`).toHaveLength(1);
      expect(claims(dir).map((name) => Number(name.split('.')[0]))).toEqual([winners[0]!.pid]);
      // Each other one names a racer that was running (the winner, or one that then gave way to it).
      for (const loser of racers.filter((r) => r !== winners[0])) {
        expect(pids).toContain(Number(loser.said[round]!.match(/\(pid (\d+)\)/)?.[1]));
      }
    });
  }, 90_000);
});
