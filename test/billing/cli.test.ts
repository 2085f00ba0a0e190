import { and, eq, like } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createTenant } from '../../src/db/repositories/tenants.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { usagePeriod } from '../../src/domain/plans.js';
import { runCli, useCliDatabase } from '../helpers/cli.js';

const cliEnv = useCliDatabase('iis-billing-cli-');

const cli = (args: string[]) => runCli(args, { DATA_DIR: cliEnv.dataDir, DATABASE_URL: cliEnv.url });

describe('operator billing CLI (self-hosted)', () => {
  it('moves a tenant to a plan at once and adds credit packs to the current month, audited', async () => {
    // The CLI migrates the database first; the tenant is made after.
    expect((await cli(['tenant', 'plan', '--tenant', 'ten_missing', '--plan', 'plan_pro'])).stderr).toMatch(
      /no tenant ten_missing/,
    );
    const tenant = await createTenant(cliEnv.database.db, { name: 'Billing CLI', plan: 'plan_starter' });

    const plan = await cli(['tenant', 'plan', '--tenant', tenant.id, '--plan', 'plan_business']);
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.stdout)).toEqual({
      tenantId: tenant.id,
      from: 'plan_starter',
      plan: 'plan_business',
      quotas: { investigationsPerMonth: 200, eventsPerMonth: 10000, chatMessagesPerMonth: 5000 },
    });
    const [row] = await cliEnv.database.db.select().from(tenants).where(eq(tenants.id, tenant.id));
    expect(row!.plan).toBe('plan_business');

    const credits = await cli(['tenant', 'credits', '--tenant', tenant.id, '--pack', 'investigations_50']);
    expect(credits.code).toBe(0);
    const period = usagePeriod(new Date());
    expect(JSON.parse(credits.stdout)).toEqual({
      tenantId: tenant.id,
      period,
      credits: { investigations: 50, events: 0 },
    });
    await cli(['tenant', 'credits', '--tenant', tenant.id, '--pack', 'events_1000']);
    const counters = await cliEnv.database.db.select().from(usageCounters).where(eq(usageCounters.tenantId, tenant.id));
    expect(counters.map((c) => [c.metric, c.period, c.count, c.credits]).sort()).toEqual([
      ['events', period, 0, 1000],
      ['investigations', period, 0, 50],
    ]);
    const audited = await cliEnv.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenant.id), like(auditLog.action, 'billing.%')));
    expect(audited.map((a) => [a.action, a.actorType, a.actorId])).toEqual([
      ['billing.plan_changed', 'system', 'operator'],
      ['billing.credits_purchased', 'system', 'operator'],
      ['billing.credits_purchased', 'system', 'operator'],
    ]);
  });

  it('refuses an unknown plan or pack with a usage message', async () => {
    const badPlan = await cli(['tenant', 'plan', '--tenant', 'ten_x', '--plan', 'plan_gold']);
    expect(badPlan.code).toBe(2);
    expect(badPlan.stderr).toMatch(/--plan must be one of plan_starter/);
    const badPack = await cli(['tenant', 'credits', '--tenant', 'ten_x', '--pack', 'events_5']);
    expect(badPack.code).toBe(2);
    expect(badPack.stderr).toMatch(
      /--pack must be one of investigations_10, investigations_50, events_1000, events_10000/,
    );
    const noTenant = await cli(['tenant', 'credits', '--pack', 'events_1000']);
    expect([noTenant.code, noTenant.stderr.split('\n')[0]]).toEqual([2, 'error: --tenant is required']);
  });
});
