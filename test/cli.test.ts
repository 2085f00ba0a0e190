import { eq } from 'drizzle-orm';
import jwt from 'jsonwebtoken';
import { describe, expect, it } from 'vitest';
import { auditLog } from '../src/db/schema/audit.js';
import { tenants } from '../src/db/schema/tenants.js';
import { runCli, useCliDatabase } from './helpers/cli.js';
import { TEST_JWT_SECRET } from './helpers/service.js';

const cliEnv = useCliDatabase('iis-cli-');

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { DATA_DIR: cliEnv.dataDir, ...env });

describe('operator CLI', () => {
  it('creates a tenant and prints one JSON line', async () => {
    const res = await cli(['tenant', 'create', '--name', 'Night Shift SRE', '--plan', 'plan_enterprise'], {
      DATABASE_URL: cliEnv.url,
    });
    expect(res.code).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const printed = JSON.parse(lines[0]!);
    expect(printed).toMatchObject({ name: 'Night Shift SRE', slug: 'night-shift-sre', plan: 'plan_enterprise' });
    const [row] = await cliEnv.database.db.select().from(tenants).where(eq(tenants.id, printed.tenantId));
    expect(row).toMatchObject({ name: 'Night Shift SRE', plan: 'plan_enterprise', status: 'active' });
  });

  it('gives an enterprise tenant the documented default quotas, or the ones its flags name', async () => {
    const byDefault = await cli(['tenant', 'create', '--name', 'Default Quotas', '--plan', 'plan_enterprise'], {
      DATABASE_URL: cliEnv.url,
    });
    expect(byDefault.code).toBe(0);
    expect(JSON.parse(byDefault.stdout).quotas).toEqual({
      investigationsPerMonth: 2000,
      eventsPerMonth: 1_000_000,
      chatMessagesPerMonth: 20_000,
    });

    const res = await cli(
      [
        'tenant',
        'create',
        '--name',
        'Custom Quotas',
        '--plan',
        'plan_enterprise',
        '--investigations-per-month',
        '5000',
        '--events-per-month',
        '250000',
        '--chat-messages-per-month',
        '0',
      ],
      { DATABASE_URL: cliEnv.url },
    );
    expect(res.code).toBe(0);
    const printed = JSON.parse(res.stdout);
    expect(printed.quotas).toEqual({ investigationsPerMonth: 5000, eventsPerMonth: 250_000, chatMessagesPerMonth: 0 });
    const [row] = await cliEnv.database.db.select().from(tenants).where(eq(tenants.id, printed.tenantId));
    expect(row!.settings.quotas).toEqual({
      investigationsPerMonth: 5000,
      eventsPerMonth: 250_000,
      chatMessagesPerMonth: 0,
    });
    const [audit] = await cliEnv.database.db.select().from(auditLog).where(eq(auditLog.tenantId, printed.tenantId));
    expect(audit).toMatchObject({
      action: 'tenant.created',
      actorId: 'cli',
      details: { plan: 'plan_enterprise', quotas: printed.quotas },
    });
  });

  it("changes an enterprise tenant's quotas (only the named ones) and audits it", async () => {
    const created = JSON.parse(
      (
        await cli(
          ['tenant', 'create', '--name', 'Growing Co', '--plan', 'plan_enterprise', '--events-per-month', '5000'],
          { DATABASE_URL: cliEnv.url },
        )
      ).stdout,
    );
    const res = await cli(['tenant', 'quotas', '--tenant', created.tenantId, '--investigations', '3000'], {
      DATABASE_URL: cliEnv.url,
    });
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({
      tenantId: created.tenantId,
      plan: 'plan_enterprise',
      quotas: { investigationsPerMonth: 3000, eventsPerMonth: 5000, chatMessagesPerMonth: 20_000 },
    });
    const [row] = await cliEnv.database.db.select().from(tenants).where(eq(tenants.id, created.tenantId));
    expect(row!.settings.quotas).toEqual({ investigationsPerMonth: 3000, eventsPerMonth: 5000 });
    const audits = await cliEnv.database.db
      .select()
      .from(auditLog)
      .where(eq(auditLog.tenantId, created.tenantId))
      .orderBy(auditLog.seq);
    expect(audits.at(-1)).toMatchObject({
      action: 'tenant.quotas_updated',
      actorType: 'system',
      actorId: 'cli',
      details: { investigationsPerMonth: 3000 },
    });

    // Refused: another plan (its quotas are the published ones), an unknown tenant.
    const pro = JSON.parse(
      (await cli(['tenant', 'create', '--name', 'Pro Co', '--plan', 'plan_pro'], { DATABASE_URL: cliEnv.url })).stdout,
    );
    const onPro = await cli(['tenant', 'quotas', '--tenant', pro.tenantId, '--events', '9000'], {
      DATABASE_URL: cliEnv.url,
    });
    expect(onPro.code).toBe(1);
    expect(onPro.stderr).toContain('plan_enterprise');
    const unknown = await cli(['tenant', 'quotas', '--tenant', 'ten_missing', '--events', '9000'], {
      DATABASE_URL: cliEnv.url,
    });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no tenant ten_missing');
  });

  it('prints a signed token alone, with the requested claims', async () => {
    const res = await cli(
      [
        'token',
        '--tenant',
        'ten_abc',
        '--role',
        'member',
        '--sub',
        'alice',
        '--email',
        'alice@example.com',
        '--ttl',
        '120',
      ],
      { JWT_SECRET: TEST_JWT_SECRET },
    );
    expect(res.code).toBe(0);
    const token = res.stdout.trim();
    expect(token.split('.')).toHaveLength(3);
    const claims = jwt.verify(token, TEST_JWT_SECRET, {
      issuer: 'incident-service',
      audience: 'incident-service-api',
    }) as jwt.JwtPayload;
    expect(claims).toMatchObject({ sub: 'alice', email: 'alice@example.com', tenant_id: 'ten_abc', roles: ['member'] });
    expect(claims.exp! - claims.iat!).toBe(120);
  });

  it.each([
    [['tenant', 'create']],
    [['tenant', 'create', '--name', 'x', '--plan', 'plan_free']],
    [['tenant', 'create', '--name', 'x', '--plan', 'plan_pro', '--events-per-month', '10']],
    [['tenant', 'create', '--name', 'x', '--plan', 'plan_enterprise', '--events-per-month', '1.5']],
    [['tenant', 'create', '--name', 'x', '--plan', 'plan_enterprise', '--investigations-per-month', '-1']],
    [['tenant', 'create', '--name', 'x', '--plan', 'plan_enterprise', '--investigations-per-month', '1000000001']],
    [['tenant', 'quotas', '--tenant', 'ten_abc']],
    [['tenant', 'quotas', '--investigations', '10']],
    [['tenant', 'quotas', '--tenant', 'ten_abc', '--events', 'lots']],
    [['token', '--tenant', 'ten_abc', '--role', 'owner']],
    [['token', '--role', 'admin']],
    [['token', '--tenant', 't', '--role', 'admin', '--ttl', 'soon']],
    // Longer than the api accepts (JWT_MAX_LIFETIME_SECONDS, 24 h by default): it would be refused.
    [['token', '--tenant', 't', '--role', 'admin', '--ttl', '86401']],
    [['token', '--tenant', 't', '--role', 'admin', '--unknown']],
    [['launch']],
    [[]],
  ])('exits non-zero with usage for %j', async (args) => {
    const res = await cli(args, { JWT_SECRET: TEST_JWT_SECRET, DATABASE_URL: cliEnv.url });
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
