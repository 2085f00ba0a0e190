import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findTemporalCli } from '../../src/launcher/temporal-cli.js';
import { freePort } from '../helpers/ports.js';

// Fake executables only: the order is what is tested, not a real download or build.
let root: string;
let dirs: { env: string; pathDir: string; cache: string; goDir: string; marker: string };
let downloadHost: Server;
let downloadUrl: string;
let silentHost: net.Server;
let silentUrl: string;
const silentSockets = new Set<net.Socket>();

function executable(file: string, body = 'exit 0') {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
}

/** A `go` that prints what the real one does on a first build (one line per module) and installs a `temporal`. */
function fakeGo(exitCode = 0) {
  executable(
    path.join(dirs.goDir, 'go'),
    [
      `echo ran > "${dirs.marker}"`,
      'i=0',
      'while [ $i -lt 160 ]; do echo "go: downloading github.com/example/module$i v1.0.$i" >&2; i=$((i+1)); done',
      exitCode === 0
        ? `printf '#!/bin/sh\\n' > "$GOBIN/temporal" && /bin/chmod +x "$GOBIN/temporal"`
        : 'echo "go: github.com/temporalio/cli/cmd/temporal@v1.5.1: no space left on device" >&2',
      `exit ${exitCode}`,
    ].join('\n'),
  );
}

beforeAll(async () => {
  downloadHost = createServer((_req, res) => res.writeHead(302, { location: 'https://example.invalid/' }).end());
  await new Promise<void>((r) => downloadHost.listen(0, '127.0.0.1', r));
  downloadUrl = `http://127.0.0.1:${(downloadHost.address() as net.AddressInfo).port}/`;
  // Accepts and never answers: what a firewall that drops packets looks like to a client.
  silentHost = net.createServer((socket) => silentSockets.add(socket));
  await new Promise<void>((r) => silentHost.listen(0, '127.0.0.1', r));
  silentUrl = `http://127.0.0.1:${(silentHost.address() as net.AddressInfo).port}/`;
});
afterAll(async () => {
  downloadHost.closeAllConnections();
  await new Promise((r) => downloadHost.close(r));
  for (const socket of silentSockets) socket.destroy();
  await new Promise((r) => silentHost.close(r));
});

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'cli-lookup-'));
  dirs = {
    env: path.join(root, 'env', 'temporal'),
    pathDir: path.join(root, 'bin'),
    cache: path.join(root, 'cache'),
    goDir: path.join(root, 'go', 'bin'),
    marker: path.join(root, 'go-ran'),
  };
  mkdirSync(dirs.pathDir, { recursive: true });
  mkdirSync(dirs.goDir, { recursive: true });
  return () => rmSync(root, { recursive: true, force: true });
});

const searchPath = () => [dirs.pathDir, dirs.goDir].join(path.delimiter);

describe('the Temporal CLI lookup', () => {
  it('takes TEMPORAL_CLI_PATH first, then a temporal on PATH, then the cache', async () => {
    executable(dirs.env);
    executable(path.join(dirs.pathDir, 'temporal'));
    executable(path.join(dirs.cache, 'temporal'));
    fakeGo();
    const lookup = { searchPath: searchPath(), cacheDir: dirs.cache, downloadUrl, log: () => undefined };

    expect(await findTemporalCli({ ...lookup, cliPath: dirs.env })).toEqual({
      path: dirs.env,
      source: 'TEMPORAL_CLI_PATH',
    });
    expect(await findTemporalCli(lookup)).toEqual({ path: path.join(dirs.pathDir, 'temporal'), source: 'PATH' });
    rmSync(path.join(dirs.pathDir, 'temporal'));
    expect(await findTemporalCli(lookup)).toEqual({ path: path.join(dirs.cache, 'temporal'), source: 'cache' });
    expect(existsSync(dirs.marker)).toBe(false);
  });

  it('refuses a TEMPORAL_CLI_PATH that is not an executable, naming it', async () => {
    writeFileSync(path.join(root, 'not-executable'), 'text');
    await expect(
      findTemporalCli({ cliPath: path.join(root, 'not-executable'), searchPath: searchPath(), log: () => undefined }),
    ).rejects.toThrow(/TEMPORAL_CLI_PATH: .*not-executable is not an executable file/);
  });

  it("leaves it to the SDK's download when its host answers, before any Go build", async () => {
    fakeGo();
    const found = await findTemporalCli({
      searchPath: searchPath(),
      cacheDir: dirs.cache,
      downloadUrl,
      log: () => undefined,
    });
    expect(found).toEqual({ path: null, source: 'sdk-download' });
    expect(existsSync(dirs.marker)).toBe(false);
  });

  it("builds with Go when the download does not answer in time, saying one line instead of go's module list", async () => {
    fakeGo();
    const said: string[] = [];
    const started = Date.now();
    const found = await findTemporalCli({
      searchPath: searchPath(),
      cacheDir: dirs.cache,
      downloadUrl: silentUrl,
      downloadTimeoutMs: 300,
      log: (m) => said.push(m),
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(found).toEqual({ path: path.join(dirs.cache, 'temporal'), source: 'go' });
    expect(said).toHaveLength(2);
    expect(said[0]).toMatch(/^No Temporal CLI found and no download reachable: building it with Go into /);
    expect(said[1]).toMatch(/^Built the Temporal CLI in \d+ s\.$/);
    expect(said.join('\n')).not.toContain('go: downloading');
    // The next start finds the build in the cache.
    expect(await findTemporalCli({ searchPath: searchPath(), cacheDir: dirs.cache, log: () => undefined })).toEqual({
      path: path.join(dirs.cache, 'temporal'),
      source: 'cache',
    });
  });

  it("shows go's output only when the build fails", async () => {
    fakeGo(1);
    const closed = `http://127.0.0.1:${await freePort()}/`;
    const said: string[] = [];
    const failure = findTemporalCli({
      searchPath: searchPath(),
      cacheDir: dirs.cache,
      downloadUrl: closed,
      log: (m) => said.push(m),
    });
    await expect(failure).rejects.toThrow(
      /go install github\.com\/temporalio\/cli.* failed \(exit 1\):[\s\S]*no space left on device/,
    );
    expect(said).toHaveLength(1);
  });

  it('says what to do when there is no CLI, no download and no Go', async () => {
    const closed = `http://127.0.0.1:${await freePort()}/`;
    await expect(
      findTemporalCli({ searchPath: dirs.pathDir, cacheDir: dirs.cache, downloadUrl: closed, log: () => undefined }),
    ).rejects.toThrow(
      /does not answer and Go is not installed\. Set TEMPORAL_CLI_PATH, put `temporal` on PATH, or install Go\./,
    );
  });
});
