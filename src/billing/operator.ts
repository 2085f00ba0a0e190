/** What an operator applies through the CLI when no payment provider is configured (self-hosted). */
import { lockAccount } from '../db/repositories/billing.js';
import { findTenant } from '../db/repositories/tenants.js';
import { remainingOf } from '../db/repositories/usage.js';
import type { Db } from '../db/client.js';
import { monthlyQuota, usagePeriod, type CreditPackId, type PlanId } from '../domain/plans.js';
import { ulid } from '../ids.js';
import { applyPlan, grantCredits } from './ledger.js';

const operator = { type: 'system' as const, id: 'operator' };

/** Moves a tenant to a plan at once; null when there is no such tenant. */
export async function operatorSetPlan(db: Db, tenantId: string, planId: PlanId): Promise<{ from: PlanId } | null> {
  return db.transaction(async (tx) => {
    const tenant = await findTenant(tx, tenantId);
    if (!tenant) return null;
    await lockAccount(tx, tenantId);
    await applyPlan(tx, {
      tenantId,
      from: tenant.plan,
      to: planId,
      actor: operator,
      paymentId: null,
      key: `${tenantId}:operator:${ulid()}:plan`,
    });
    return { from: tenant.plan };
  });
}

/** Adds a pack's credits to the tenant's current period; the credits left after, or null without the tenant. */
export async function operatorGrantCredits(
  db: Db,
  tenantId: string,
  pack: CreditPackId,
  now: Date,
): Promise<{ period: string; credits: { investigations: number; events: number } } | null> {
  const period = usagePeriod(now);
  const tenant = await db.transaction(async (tx) => {
    const found = await findTenant(tx, tenantId);
    if (!found) return null;
    await grantCredits(tx, {
      tenantId,
      pack,
      period,
      actor: operator,
      paymentId: null,
      amountUsd: 0,
      key: `${tenantId}:operator:${ulid()}:credits`,
    });
    return found;
  });
  if (!tenant) return null;
  const left = (metric: 'investigations' | 'events') =>
    remainingOf(db, { tenantId, period, metric, limit: monthlyQuota(tenant, metric) }).then((r) => r.credits);
  return { period, credits: { investigations: await left('investigations'), events: await left('events') } };
}
