import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../src/config.js';

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
