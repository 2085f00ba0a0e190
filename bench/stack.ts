/**
 * Runs the real service (`src/start.ts`, what `npm start` runs) as a child process on free ports
 * with its own data folder, and hands back what a load generator needs.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import path from 'node:path';
import { projectRoot } from '../src/config.js';
import { embeddedDatabaseUrl } from '../src/db/embedded.js';
import { signToken } from '../src/auth/tokens.js';
import { jwtSecretFile } from '../src/runtime-settings.js';
import { freePort } from '../test/helpers/ports.js';

export interface StackPorts {
  api: number;
  pg: number;
  temporal: number;
  temporalUi: number;
}

export interface Stack {
  baseUrl: string;
  tenantId: string;
  token: string;
  databaseUrl: string;
  /** The Temporal dev server the service started (host:port). */
  temporalAddress: string;
  /** The service process (api and worker), for its memory. */
  pid: number;
  /** Its data folder (generated secrets, for more processes against the same stack). */
  dataDir: string;
  ports: StackPorts;
  /** What the service printed so far (its banner, then its log lines at LOG_LEVEL warn). */
  output(): string;
  /** Resolves once the service process has exited (however it was stopped). */
  stopped(): Promise<void>;
  /** Stops the service (SIGTERM) and removes its data folder unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

/** Node flags for a CPU profile of a service process, into BENCH_PROFILE's folder when it is set. */
const profileFlags = (): string[] =>
  process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];

/**
 * Service processes run in sessions of their own, as containers would: on Linux with autogroup
 * scheduling, each session is a scheduling group that shares the CPU equally with the others
 * (each PostgreSQL backend is one already), so the api and the worker are no longer one group
 * with the load generator. A detached child outlives a killed parent, so it is stopped on exit.
 */
function ownSession(child: ChildProcess): void {
  const stop = () => child.kill('SIGTERM');
  process.once('exit', stop);
  child.once('exit', () => process.removeListener('exit', stop));
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    if (process.listenerCount(signal) === 0) process.once(signal, () => process.exit(code));
  }
}

/** `reuse`: the data folder and ports of an earlier stack, to start the service again on them. */
export async function startStack(
  env: Record<string, string> = {},
  reuse?: { dataDir: string; ports: StackPorts },
): Promise<Stack> {
  const dataDir = reuse?.dataDir ?? mkdtempSync(path.join(tmpdir(), 'iis-bench-'));
  const ports: StackPorts = reuse?.ports ?? {
    pg: await freePort(),
    api: await freePort(),
    temporal: await freePort(),
    temporalUi: await freePort(),
  };
  const child = spawn(
    process.execPath,
    [...profileFlags(), '--import', 'tsx', path.join(projectRoot, 'src/launcher/start.ts')],
    {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(ports.api),
        PG_PORT: String(ports.pg),
        TEMPORAL_PORT: String(ports.temporal),
        TEMPORAL_UI_PORT: String(ports.temporalUi),
        LOG_LEVEL: 'warn',
        JWT_TTL_SECONDS: '7200',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    },
  );
  ownSession(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  const printed = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Stop with Ctrl-C.')) resolve(out);
    });
    child.once('exit', (code) => reject(new Error(`the service exited with ${code} before it was ready:\n${out}`)));
  });
  const field = (label: string) => printed.match(new RegExp(`${label}:\\s+(\\S+)`))?.[1] ?? '';
  const tenantId = field('Demo tenant');
  // npm start prints its admin token to a terminal only (ADR 0281): with its output piped here,
  // the token is minted from the secret it generated, as the operator CLI's `token` does.
  const token = signToken({
    secret: readFileSync(jwtSecretFile(dataDir), 'utf8').trim(),
    tenantId,
    role: 'admin',
    sub: 'demo-admin',
    email: 'admin@demo.local',
    ttlSeconds: Number(env.JWT_TTL_SECONDS ?? 7200),
  });
  return {
    baseUrl: field('API'),
    tenantId,
    token,
    databaseUrl: embeddedDatabaseUrl(dataDir, ports.pg)!,
    temporalAddress: `127.0.0.1:${ports.temporal}`,
    pid: child.pid ?? 0,
    dataDir,
    ports,
    output: () => out,
    stopped: () => exited,
    async stop(options = {}) {
      child.kill('SIGTERM');
      await exited;
      if (!options.keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Runs `call` with `parallel` loops until `count` calls or `durationMs` elapsed; prints a line. */
export async function measure(
  name: string,
  options: { count?: number; durationMs?: number; parallel: number },
  call: (i: number) => Promise<{ ok: boolean }>,
): Promise<{ perSecond: number; p50: number; p99: number; done: number; errors: number }> {
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = options.durationMs ? started + options.durationMs : Infinity;
  const limit = options.count ?? Infinity;
  await Promise.all(
    Array.from({ length: options.parallel }, async () => {
      while (next < limit && performance.now() < deadline) {
        const i = next++;
        const t = performance.now();
        const res = await call(i);
        if (!res.ok) errors++;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const result = {
    perSecond: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    done: latencies.length,
    errors,
  };
  console.log(
    `${name.padEnd(40)} n=${String(result.done).padEnd(6)} c=${String(options.parallel).padEnd(3)} ` +
      `${result.perSecond.toFixed(1).padStart(8)} /s  p50 ${result.p50.toFixed(1)} ms  ` +
      `p95 ${percentile(latencies, 95).toFixed(1)} ms  p99 ${result.p99.toFixed(1)} ms  errors ${errors}`,
  );
  return result;
}

/** Runs a benchmark's main function and exits with its outcome. */
export function runBenchmark(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/** A compiled api process against the stack's database and Temporal; resolves once it answers. */
export async function startApi(stack: Stack): Promise<{ pid: number; baseUrl: string; stop(): void }> {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: projectRoot, stdio: 'inherit' });
  const port = await freePort();
  const child = spawn(process.execPath, [...profileFlags(), path.join(projectRoot, 'dist/api/server.js')], {
    env: {
      ...process.env,
      DATA_DIR: stack.dataDir,
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      PORT: String(port),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
    detached: true,
  });
  ownSession(child);
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`the api exited with ${child.exitCode}`);
    const ok = await fetch(`${baseUrl}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 300) throw new Error('the api did not answer within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { pid: child.pid!, baseUrl, stop: () => child.kill('SIGTERM') };
}

/** bench/floor-server.ts in a session of its own, as the api is; resolves once it listens. */
export async function startFloorServer(env: Record<string, string> = {}): Promise<{ baseUrl: string; stop(): void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'bench/floor-server.ts')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  ownSession(child);
  const port = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = out.match(/listening (\d+)/);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the floor server exited with ${code}`)));
  });
  return { baseUrl: `http://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
}

/**
 * Lowers the CPU priority of the service process (the worker) and of its Temporal dev server
 * child to `nice`, as `cpu_shares` does for the worker in docker-compose.yml: every thread's nice
 * value, and the nice value of the scheduling group of their session (Linux autogroup), which is
 * what weighs against the api's and PostgreSQL's groups. PostgreSQL keeps its priority: the api
 * writes through it.
 */
export function lowerWorkerPriority(stack: Stack, nice: number): void {
  for (const pid of [stack.pid, ...devServerPids(stack)]) {
    for (const tid of readdirSync(`/proc/${pid}/task`)) setPriority(Number(tid), nice);
    // The dev server shares the service's session (one scheduling group); written for each in
    // case a launcher gives it a session of its own.
    try {
      writeFileSync(`/proc/${pid}/autogroup`, String(nice));
    } catch {
      // No autogroup scheduling on this kernel: the threads' nice values are all there is.
    }
  }
}

/** The Temporal dev server the service process started (none when TEMPORAL_ADDRESS pointed it elsewhere). */
export function devServerPids(stack: Stack): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(stack.pid), 'temporal'])
      .toString()
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return []; // pgrep exits 1 when it finds none
  }
}

/** The machine's CPU time split over a window, from /proc/stat (Linux). */
export function cpuWindow(): () => string {
  const read = () => readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const before = read();
  return () => {
    const [user, nice, system, idle, iowait, irq, softirq, steal] = read().map((v, i) => v - before[i]!) as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const total = user + nice + system + idle + iowait + irq + softirq + steal;
    const pct = (v: number) => `${Math.round((100 * v) / total)} %`;
    return `user ${pct(user)}, niced ${pct(nice)}, system ${pct(system + irq + softirq)}, idle ${pct(idle + iowait)}, stolen by the host ${pct(steal)}`;
  };
}

/** The sockets a process holds, by inode (Linux: /proc/<pid>/fd); `tcpConnections` names the TCP ones. */
function socketInodes(pid: number | string): string[] {
  const inodes: string[] = [];
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const match = readlinkSync(`/proc/${pid}/fd/${fd}`).match(/^socket:\[(\d+)\]$/);
        if (match) inodes.push(match[1]!);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // exited
  }
  return inodes;
}

/** Every TCP connection on the machine by inode: its local and remote address (hex, as /proc/net/tcp writes them). */
function tcpConnections(): Map<string, { local: string; remote: string }> {
  const byInode = new Map<string, { local: string; remote: string }>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length > 9) byInode.set(fields[9]!, { local: fields[1]!, remote: fields[2]! });
    }
  }
  return byInode;
}

/**
 * The CPU each group of processes used over a window, in cores (Linux: /proc/<pid>/stat, every
 * thread; USER_HZ is 100). PostgreSQL's backends are counted for the group at the other end of
 * their connection (`postgres for <group>`); its postmaster, its background processes and the
 * backends of anything else are `postgres (rest)`. A backend that exits within the window loses
 * its time (the pools' connections stay for the window).
 */
export function processCpuWindow(groups: Record<string, number[]>): () => Record<string, number> {
  const ticks = (pid: number | string): { comm: string; ticks: number } | undefined => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return {
        comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
        ticks: Number(fields[11]) + Number(fields[12]),
      };
    } catch {
      return undefined; // exited
    }
  };
  /** Each PostgreSQL process with its ticks and the group its client belongs to. */
  const postgres = () => {
    const connections = tcpConnections();
    const groupOf = new Map<string, string>(); // local address of a client socket -> group
    for (const [name, pids] of Object.entries(groups)) {
      for (const pid of pids)
        for (const inode of socketInodes(pid)) {
          const c = connections.get(inode);
          if (c) groupOf.set(c.local, name);
        }
    }
    const found = new Map<string, { ticks: number; group: string }>();
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const t = ticks(pid);
      if (t?.comm !== 'postgres') continue;
      const client = socketInodes(pid)
        .map((inode) => groupOf.get(connections.get(inode)?.remote ?? ''))
        .find(Boolean);
      found.set(pid, { ticks: t.ticks, group: client ? `postgres for ${client}` : 'postgres (rest)' });
    }
    return found;
  };
  const read = () => ({
    groups: Object.fromEntries(
      Object.entries(groups).map(([name, pids]) => [name, pids.map((pid) => ticks(pid)?.ticks ?? 0)]),
    ),
    postgres: postgres(),
  });
  const before = read();
  const startedAt = performance.now();
  return () => {
    const after = read();
    const seconds = (performance.now() - startedAt) / 1000;
    const result: Record<string, number> = {};
    for (const [name, list] of Object.entries(after.groups))
      result[name] = list.reduce((sum, t, i) => sum + t - before.groups[name]![i]!, 0);
    for (const [pid, { ticks: t, group }] of after.postgres)
      result[group] = (result[group] ?? 0) + t - (before.postgres.get(pid)?.ticks ?? 0);
    for (const name of Object.keys(result)) result[name] = result[name]! / 100 / seconds;
    return result;
  };
}
