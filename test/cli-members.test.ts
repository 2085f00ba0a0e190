/**
 * The operator CLI's `member add` and `member list`: a tenant's first admin, made without the
 * api (the account by lower-cased email, the membership, the audit entry), as an operator runs it.
 */
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createTenant } from '../src/db/repositories/tenants.js';
import { auditLog } from '../src/db/schema/audit.js';
import { memberships, userAccounts } from '../src/db/schema/identity.js';
import { runCli, useCliDatabase } from './helpers/cli.js';

const cliEnv = useCliDatabase('iis-cli-members-');

const cli = (args: string[]) => runCli(args, { DATA_DIR: cliEnv.dataDir, DATABASE_URL: cliEnv.url });
const newTenant = (name: string) => createTenant(cliEnv.database.db, { name, plan: 'plan_business' });

async function membershipsOf(tenantId: string) {
  return cliEnv.database.db.select().from(memberships).where(eq(memberships.tenantId, tenantId));
}

describe('member add', () => {
  it("makes a tenant's first admin: the account, the membership, the audit entry, one JSON line", async () => {
    const tenant = await newTenant('First Admin Co');
    const res = await cli([
      'member',
      'add',
      '--tenant',
      tenant.id,
      '--email',
      'Ada.Lovelace@Example.COM',
      '--role',
      'admin',
      '--name',
      'Ada Lovelace',
    ]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const printed = JSON.parse(lines[0]!);
    expect(printed).toEqual({
      userId: expect.stringMatching(/^usr_[0-9a-z]{26}$/),
      tenantId: tenant.id,
      email: 'ada.lovelace@example.com',
      role: 'admin',
    });
    const [account] = await cliEnv.database.db.select().from(userAccounts).where(eq(userAccounts.id, printed.userId));
    expect(account).toMatchObject({ email: 'ada.lovelace@example.com', name: 'Ada Lovelace' });
    expect(await membershipsOf(tenant.id)).toEqual([
      expect.objectContaining({ userId: printed.userId, role: 'admin', addedBy: 'operator' }),
    ]);
    const audits = await cliEnv.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenant.id), eq(auditLog.targetId, printed.userId)));
    expect(audits).toEqual([
      expect.objectContaining({
        action: 'member.added',
        actorType: 'system',
        actorId: 'operator',
        targetType: 'member',
        details: { email: 'ada.lovelace@example.com', role: 'admin', addedBy: 'operator' },
      }),
    ]);
  });

  it('reuses the account of an email across tenants, changes the role of an existing member, and keeps the last admin', async () => {
    const first = await newTenant('Reuse One');
    const second = await newTenant('Reuse Two');
    const one = JSON.parse(
      (await cli(['member', 'add', '--tenant', first.id, '--email', 'grace@example.com', '--role', 'admin'])).stdout,
    );
    const two = JSON.parse(
      (await cli(['member', 'add', '--tenant', second.id, '--email', 'GRACE@example.com', '--role', 'member'])).stdout,
    );
    expect(two.userId).toBe(one.userId);
    expect(
      await cliEnv.database.db.select().from(userAccounts).where(eq(userAccounts.email, 'grace@example.com')),
    ).toHaveLength(1);
    expect((await membershipsOf(second.id)).map((m) => m.role)).toEqual(['member']);

    // Promoted in the second tenant; the first keeps its role.
    const promoted = await cli([
      'member',
      'add',
      '--tenant',
      second.id,
      '--email',
      'grace@example.com',
      '--role',
      'admin',
    ]);
    expect(promoted.code).toBe(0);
    expect(JSON.parse(promoted.stdout)).toMatchObject({ userId: one.userId, role: 'admin' });
    expect((await membershipsOf(second.id)).map((m) => m.role)).toEqual(['admin']);
    const [changed] = await cliEnv.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, second.id), eq(auditLog.action, 'member.role_changed')));
    expect(changed).toMatchObject({
      actorType: 'system',
      actorId: 'operator',
      details: { from: 'member', to: 'admin' },
    });

    // The only admin of the first tenant is not demoted.
    const demoted = await cli([
      'member',
      'add',
      '--tenant',
      first.id,
      '--email',
      'grace@example.com',
      '--role',
      'member',
    ]);
    expect(demoted.code).toBe(1);
    expect(demoted.stderr).toContain('last admin');
    expect(demoted.stdout).toBe('');
    expect((await membershipsOf(first.id)).map((m) => m.role)).toEqual(['admin']);
  });

  it.each([
    [['member', 'add', '--email', 'a@example.com', '--role', 'admin'], '--tenant is required'],
    [['member', 'add', '--tenant', 'TENANT', '--email', 'not an email', '--role', 'admin'], '--email'],
    [
      ['member', 'add', '--tenant', 'TENANT', '--email', `${'a'.repeat(250)}@example.com`, '--role', 'admin'],
      '--email',
    ],
    [['member', 'add', '--tenant', 'TENANT', '--role', 'admin'], '--email'],
    [
      ['member', 'add', '--tenant', 'TENANT', '--email', 'a@example.com', '--role', 'owner'],
      '--role must be admin or member',
    ],
    [
      ['member', 'add', '--tenant', 'TENANT', '--email', 'a@example.com', '--role', 'admin', '--name', 'a\nb'],
      '--name',
    ],
    [
      ['member', 'add', '--tenant', 'ten_missing', '--email', 'a@example.com', '--role', 'admin'],
      'no tenant ten_missing',
    ],
    [['member', 'list'], '--tenant is required'],
    [['member', 'list', '--tenant', 'ten_missing'], 'no tenant ten_missing'],
    [['member', 'remove', '--tenant', 'TENANT'], 'unknown command: member remove'],
  ])('exits 2 with a clear error and the usage for %j', async (args, message) => {
    const tenant = await newTenant('Refusals');
    const res = await cli(args.map((a) => (a === 'TENANT' ? tenant.id : a)));
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(message);
    expect(res.stderr).toContain('member add --tenant TENANT_ID --email EMAIL');
    expect(res.stdout).toBe('');
    expect(await membershipsOf(tenant.id)).toEqual([]);
  });
});

describe('member list', () => {
  it("prints the tenant's members, one JSON line each, oldest first, and only that tenant's", async () => {
    const tenant = await newTenant('Listed Co');
    const other = await newTenant('Not Listed Co');
    const ada = JSON.parse(
      (await cli(['member', 'add', '--tenant', tenant.id, '--email', 'ada@example.com', '--role', 'admin'])).stdout,
    );
    const max = JSON.parse(
      (
        await cli([
          'member',
          'add',
          '--tenant',
          tenant.id,
          '--email',
          'max@example.com',
          '--role',
          'member',
          '--name',
          'Max Planck',
        ])
      ).stdout,
    );
    await cli(['member', 'add', '--tenant', other.id, '--email', 'olga@example.com', '--role', 'admin']);
    const res = await cli(['member', 'list', '--tenant', tenant.id]);
    expect(res.code).toBe(0);
    expect(
      res.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { userId: ada.userId, email: 'ada@example.com', name: null, role: 'admin', joinedAt: expect.any(String) },
      {
        userId: max.userId,
        email: 'max@example.com',
        name: 'Max Planck',
        role: 'member',
        joinedAt: expect.any(String),
      },
    ]);
    const empty = await cli(['member', 'list', '--tenant', (await newTenant('Empty Co')).id]);
    expect(empty).toMatchObject({ code: 0, stdout: '' });
  });
});
