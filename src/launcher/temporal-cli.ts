import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';
import { TEMPORAL_CLI_MODULE, temporalCacheDir } from '../temporal/dev-server.js';

/** Where the Temporal SDK downloads its CLI from (its core's download host). */
export const TEMPORAL_DOWNLOAD_URL = 'https://temporal.download/';
/** A machine with no internet answers nothing at all: the lookup moves on to Go after this. */
const DOWNLOAD_PROBE_TIMEOUT_MS = 5_000;
/** The end of go's output kept for the error when the build fails. */
const GO_OUTPUT_TAIL_CHARS = 4_000;

export type TemporalCliSource = 'TEMPORAL_CLI_PATH' | 'PATH' | 'cache' | 'sdk-download' | 'go';

/** `path` is null for `sdk-download`: the dev server is then started by the SDK, which downloads it. */
export interface FoundTemporalCli {
  path: string | null;
  source: TemporalCliSource;
}

export interface TemporalCliLookup {
  /** TEMPORAL_CLI_PATH. */
  cliPath?: string | undefined;
  /** The PATH searched for `temporal` and `go`; process.env.PATH by default. */
  searchPath?: string | undefined;
  cacheDir?: string;
  downloadUrl?: string;
  downloadTimeoutMs?: number;
  log: (message: string) => void;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string, searchPath: string): string | null {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

/** Any HTTP answer means the SDK can reach its download; no answer in time means no internet. */
async function reachable(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const res = await fetch(url, { method: 'HEAD', redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/**
 * `go install` into the cache, go's own output (about 160 `go: downloading` lines) kept and
 * shown only when the build fails: one progress line is what a first start says.
 */
async function buildWithGo(go: string, cacheDir: string, searchPath: string, log: (m: string) => void) {
  mkdirSync(cacheDir, { recursive: true });
  log(
    `No Temporal CLI found and no download reachable: building it with Go into ${cacheDir} (first start only, a few minutes)...`,
  );
  const started = Date.now();
  const child = spawn(go, ['install', TEMPORAL_CLI_MODULE], {
    env: { ...process.env, PATH: searchPath, GOBIN: cacheDir, CGO_ENABLED: process.env.CGO_ENABLED ?? '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-GO_OUTPUT_TAIL_CHARS);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const code = await new Promise<number | string>((resolve) => {
    child.on('error', (err) => resolve(err.message));
    child.on('close', (status, signal) => resolve(status ?? signal ?? 'unknown'));
  });
  const built = path.join(cacheDir, 'temporal');
  if (code !== 0 || !isExecutable(built)) {
    throw new Error(`go install ${TEMPORAL_CLI_MODULE} failed (exit ${code}):\n${output.trim()}`);
  }
  log(`Built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)} s.`);
  return built;
}

/**
 * Finds the Temporal CLI (ADR 0281), first match wins: TEMPORAL_CLI_PATH; a `temporal` on PATH;
 * the binary built before into the project's cache; the SDK's download when its host answers;
 * else a build with Go into the cache.
 */
export async function findTemporalCli(options: TemporalCliLookup): Promise<FoundTemporalCli> {
  if (options.cliPath) {
    if (!isExecutable(options.cliPath)) {
      throw new Error(`TEMPORAL_CLI_PATH: ${options.cliPath} is not an executable file`);
    }
    return { path: options.cliPath, source: 'TEMPORAL_CLI_PATH' };
  }
  const searchPath = options.searchPath ?? process.env.PATH ?? '';
  const installed = onPath('temporal', searchPath);
  if (installed) return { path: installed, source: 'PATH' };
  const cacheDir = options.cacheDir ?? temporalCacheDir;
  const cached = path.join(cacheDir, 'temporal');
  if (isExecutable(cached)) return { path: cached, source: 'cache' };
  const downloadUrl = options.downloadUrl ?? TEMPORAL_DOWNLOAD_URL;
  if (await reachable(downloadUrl, options.downloadTimeoutMs ?? DOWNLOAD_PROBE_TIMEOUT_MS)) {
    return { path: null, source: 'sdk-download' };
  }
  const go = onPath('go', searchPath);
  if (!go) {
    throw new Error(
      `No Temporal CLI: ${downloadUrl} does not answer and Go is not installed. ` +
        'Set TEMPORAL_CLI_PATH, put `temporal` on PATH, or install Go.',
    );
  }
  return { path: await buildWithGo(go, cacheDir, searchPath, options.log), source: 'go' };
}
