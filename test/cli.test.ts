import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../src/config.js';
import { connectDatabase, type Database } from '../src/db/client.js';
import { tenants } from '../src/db/schema/tenants.js';
import { createTestDatabase, TEST_JWT_SECRET } from './helpers/service.js';

let databaseUrl: string;
let database: Database;
const dataDir = mkdtempSync(path.join(tmpdir(), 'iis-cli-'));

beforeAll(async () => {
  databaseUrl = (await createTestDatabase()).url;
  database = connectDatabase(databaseUrl, { max: 1 });
});
afterAll(async () => {
  await database?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'src/cli.ts'), ...args], {
      env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('operator CLI', () => {
  it('creates a tenant and prints one JSON line', async () => {
    const res = await cli(['tenant', 'create', '--name', 'Night Shift SRE', '--plan', 'plan_enterprise'], { DATABASE_URL: databaseUrl });
    expect(res.code).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const printed = JSON.parse(lines[0]!);
    expect(printed).toMatchObject({ name: 'Night Shift SRE', slug: 'night-shift-sre', plan: 'plan_enterprise' });
    const [row] = await database.db.select().from(tenants).where(eq(tenants.id, printed.tenantId));
    expect(row).toMatchObject({ name: 'Night Shift SRE', plan: 'plan_enterprise', status: 'active' });
  });

  it('prints a signed token alone, with the requested claims', async () => {
    const res = await cli(
      ['token', '--tenant', 'ten_abc', '--role', 'member', '--sub', 'alice', '--email', 'alice@example.com', '--ttl', '120'],
      { JWT_SECRET: TEST_JWT_SECRET },
    );
    expect(res.code).toBe(0);
    const token = res.stdout.trim();
    expect(token.split('.')).toHaveLength(3);
    const claims = jwt.verify(token, TEST_JWT_SECRET, { issuer: 'incident-service', audience: 'incident-service-api' }) as jwt.JwtPayload;
    expect(claims).toMatchObject({ sub: 'alice', email: 'alice@example.com', tenant_id: 'ten_abc', roles: ['member'] });
    expect(claims.exp! - claims.iat!).toBe(120);
  });

  it.each([
    [['tenant', 'create']],
    [['tenant', 'create', '--name', 'x', '--plan', 'plan_free']],
    [['token', '--tenant', 'ten_abc', '--role', 'owner']],
    [['token', '--role', 'admin']],
    [['token', '--tenant', 't', '--role', 'admin', '--ttl', 'soon']],
    // Longer than the api accepts (JWT_MAX_LIFETIME_SECONDS, 24 h by default): it would be refused.
    [['token', '--tenant', 't', '--role', 'admin', '--ttl', '86401']],
    [['token', '--tenant', 't', '--role', 'admin', '--unknown']],
    [['launch']],
    [[]],
  ])('exits non-zero with usage for %j', async (args) => {
    const res = await cli(args, { JWT_SECRET: TEST_JWT_SECRET, DATABASE_URL: databaseUrl });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('Usage:');
    expect(res.stdout).toBe('');
  });

  it('says what is missing when no secret is configured or generated', async () => {
    const res = await cli(['token', '--tenant', 'ten_abc', '--role', 'admin']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('JWT_SECRET');
  });
});
