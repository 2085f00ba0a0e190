import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { projectRoot } from '../../src/config.js';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { createTestDatabase } from './service.js';

/** Runs the operator CLI (`src/cli.ts`) as `npm run cli` does, with only `env` (and PATH) set. */
export function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'src/cli.ts'), ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/**
 * What a CLI test file runs against: a database of its own (migrated by the CLI's first command)
 * and a data folder, made before its tests and removed after. Read the fields inside tests.
 */
export function useCliDatabase(prefix: string): { readonly url: string; readonly database: Database; dataDir: string } {
  const dataDir = mkdtempSync(path.join(tmpdir(), prefix));
  let url = '';
  let database: Database | undefined;
  beforeAll(async () => {
    url = (await createTestDatabase()).url;
    database = connectDatabase(url, { max: 1 });
  });
  afterAll(async () => {
    await database?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    get url() {
      return url;
    },
    get database() {
      return database!;
    },
    dataDir,
  };
}
