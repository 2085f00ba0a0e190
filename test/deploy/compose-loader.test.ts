/**
 * docker-compose.yml loaded by compose's own loader (compose-go, the library docker compose is
 * built on; test/deploy/compose-config is a 30-line Go wrapper, built from the Go module proxy),
 * with no secret in the environment: what `docker compose config`, `down` or `logs` would do first.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/config.js';

const run = promisify(execFile);
const work = mkdtempSync(path.join(tmpdir(), 'compose-config-'));
const binary = path.join(work, 'compose-config');
/** Only what Go and the loader need: none of the service's settings or secrets. */
const bareEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? work };

interface Project {
  services: Record<
    string,
    {
      image?: string;
      ports?: { host_ip?: string; published?: string; target: number }[];
      healthcheck?: { test?: string[] };
      environment?: Record<string, string | null>;
      depends_on?: Record<string, { condition: string }>;
    }
  >;
}

async function load(file: string): Promise<{ project?: Project; error?: string }> {
  try {
    const { stdout } = await run(binary, [file], { cwd: path.dirname(file), env: bareEnv });
    return { project: JSON.parse(stdout) as Project };
  } catch (error) {
    return { error: String((error as { stderr?: string }).stderr ?? error) };
  }
}

beforeAll(async () => {
  await run('go', ['build', '-o', binary, '.'], {
    cwd: path.join(projectRoot, 'test/deploy/compose-config'),
    env: { ...process.env },
  });
}, 300_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('docker-compose.yml through compose-go', () => {
  it('loads with no secret set, the UI on loopback and Temporal unpublished', async () => {
    const { project, error } = await load(path.join(projectRoot, 'docker-compose.yml'));
    expect(error).toBeUndefined();
    const services = project?.services ?? {};
    expect(Object.keys(services).sort()).toEqual(
      [
        'api',
        'migrate',
        'postgres',
        'temporal',
        'temporal-namespace',
        'temporal-postgres',
        'temporal-schema',
        'temporal-ui',
        'worker',
      ].sort(),
    );
    expect(services['temporal-ui']?.ports).toEqual([
      expect.objectContaining({ host_ip: '127.0.0.1', published: '8233', target: 8080 }),
    ]);
    expect(services.temporal?.ports).toBeUndefined();
    expect(services.api?.environment?.SKILL_ENCRYPTION_KEY).toBe('');
    expect(services.worker?.environment?.NODE_OPTIONS).toBe('--max-semi-space-size=2');
    expect(services.api?.healthcheck?.test?.join(' ')).toContain('/health');
    expect(services.worker?.healthcheck?.test?.join(' ')).toContain('dist/temporal/worker.js');
    expect(services.api?.depends_on?.['temporal-namespace']?.condition).toBe('service_completed_successfully');
  });

  it('refuses what would break down and logs: the required-variable syntax the file used to have', async () => {
    const text = readFileSync(path.join(projectRoot, 'docker-compose.yml'), 'utf8');
    const broken = text.replace(
      'SKILL_ENCRYPTION_KEY: ${SKILL_ENCRYPTION_KEY:-}',
      'SKILL_ENCRYPTION_KEY: ${SKILL_ENCRYPTION_KEY:?set it}',
    );
    expect(broken).not.toBe(text);
    const file = path.join(work, 'docker-compose.yml');
    writeFileSync(file, broken);
    const { project, error } = await load(file);
    expect(project).toBeUndefined();
    expect(error).toContain('SKILL_ENCRYPTION_KEY');
  });
});
