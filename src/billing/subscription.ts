import {
  abandonUnreachedPayment,
  dueChanges,
  findAccount,
  findPendingUpgrade,
  insertPayment,
  lockAccount,
  type PaymentRow,
} from '../db/repositories/billing.js';
import { appendAudit } from '../db/repositories/audit.js';
import { findTenant } from '../db/repositories/tenants.js';
import { remainingOf } from '../db/repositories/usage.js';
import type { TenantRow } from '../db/schema/tenants.js';
import {
  getPlan,
  monthlyQuota,
  planRank,
  proratedUpgradeCents,
  subscriptionPeriod,
  usagePeriod,
  type PlanId,
  type QuotaMetric,
} from '../domain/plans.js';
import { AppError } from '../errors.js';
import { newId, ulid } from '../ids.js';
import { applyPlan, cancelPendingPlan, schedulePlan, type ChangeActor } from './ledger.js';
import { ensureProviderPayment, toPaymentView, type PaymentView } from './payments.js';
import { notConfigured, usd, type BillingActor, type BillingDeps } from './types.js';

/** Below the provider's smallest charge (Stripe: 0.50 USD), an upgrade applies at once, free. */
export const MIN_CHARGE_CENTS = 50;

export interface SubscriptionView {
  planId: PlanId;
  status: 'active';
  currentPeriodStart: string;
  currentPeriodEnd: string;
  usage: Record<'investigations' | 'events' | 'chat', { used: number; limit: number }>;
  credits: { investigations: number; events: number };
  pendingChange: { planId: PlanId; effectiveAt: string } | null;
}

export async function subscriptionOf(
  deps: Pick<BillingDeps, 'db' | 'clock'>,
  tenantId: string,
): Promise<SubscriptionView> {
  const now = deps.clock();
  await applyDueChanges(deps, now, tenantId);
  const tenant = (await findTenant(deps.db, tenantId))!;
  const period = usagePeriod(now);
  const metric = (m: QuotaMetric) =>
    remainingOf(deps.db, { tenantId, period, metric: m, limit: monthlyQuota(tenant, m) }).then((r) => ({
      used: r.used,
      limit: monthlyQuota(tenant, m),
      credits: r.credits,
    }));
  const [investigations, events, chat, account] = await Promise.all([
    metric('investigations'),
    metric('events'),
    metric('chat_messages'),
    findAccount(deps.db, tenantId),
  ]);
  const { start, end } = subscriptionPeriod(now);
  return {
    planId: tenant.plan,
    status: 'active',
    currentPeriodStart: start.toISOString(),
    currentPeriodEnd: end.toISOString(),
    usage: {
      investigations: { used: investigations.used, limit: investigations.limit },
      events: { used: events.used, limit: events.limit },
      chat: { used: chat.used, limit: chat.limit },
    },
    credits: { investigations: investigations.credits, events: events.credits },
    pendingChange:
      account?.pendingPlanId && account.pendingEffectiveAt
        ? { planId: account.pendingPlanId, effectiveAt: account.pendingEffectiveAt.toISOString() }
        : null,
  };
}

/** Applies the pending changes due at `now` (all tenants', or one's); durable: the pending row is the state. */
export async function applyDueChanges(deps: Pick<BillingDeps, 'db'>, now: Date, tenantId?: string): Promise<number> {
  let applied = 0;
  for (const id of await dueChanges(deps.db, now, tenantId)) {
    applied += await deps.db.transaction(async (tx) => {
      const account = await lockAccount(tx, id);
      if (!account.pendingPlanId || !account.pendingEffectiveAt || account.pendingEffectiveAt > now) return 0;
      const tenant = (await findTenant(tx, id))!;
      await applyPlan(tx, {
        tenantId: id,
        from: tenant.plan,
        to: account.pendingPlanId,
        actor: { type: 'system', id: 'billing' },
        paymentId: null,
        key: `${id}:plan:${account.pendingEffectiveAt.toISOString()}`,
      });
      return 1;
    });
  }
  return applied;
}

/** The metrics whose use this period is already above what `planId` allows. */
export async function usageAbove(
  deps: Pick<BillingDeps, 'db' | 'clock'>,
  tenant: TenantRow,
  planId: PlanId,
): Promise<Array<{ metric: QuotaMetric; used: number; limit: number }>> {
  const period = usagePeriod(deps.clock());
  const target = { plan: planId, settings: tenant.settings };
  const metrics: QuotaMetric[] = ['investigations', 'events', 'chat_messages'];
  const rows = await Promise.all(
    metrics.map(async (metric) => {
      const limit = monthlyQuota(target, metric);
      const { used } = await remainingOf(deps.db, { tenantId: tenant.id, period, metric, limit });
      return { metric, used, limit };
    }),
  );
  return rows.filter((r) => r.used > r.limit);
}

export type PlanChangeOutcome =
  | { outcome: 'unchanged' | 'applied' | 'scheduled' | 'canceled'; subscription: SubscriptionView }
  | { outcome: 'payment_required'; payment: PaymentView; subscription: SubscriptionView };

/** Another plan while an upgrade awaits its payment: once paid, the upgrade would undo it. */
const awaitingPayment = (row: PaymentRow) =>
  new AppError(
    'conflict',
    `An upgrade to ${row.item} (${row.id}) awaits its payment; it must succeed or fail before another plan change`,
  );

/**
 * The upgrade awaiting its payment, if any. One to another plan that never reached the provider
 * (it was down) is failed instead: nobody holds its client secret, and it would block every change.
 */
async function pendingUpgrade(deps: BillingDeps, tenantId: string, planId: PlanId): Promise<PaymentRow | undefined> {
  const pending = await findPendingUpgrade(deps.db, tenantId);
  if (!pending || pending.item === planId || pending.providerPaymentId !== null) return pending;
  const reason = 'never reached the payment provider; abandoned for another plan change';
  if (await abandonUnreachedPayment(deps.db, { tenantId, paymentId: pending.id, reason })) return undefined;
  return findPendingUpgrade(deps.db, tenantId);
}

const enterpriseRefusal = () =>
  new AppError(
    'plan_by_arrangement',
    'plan_enterprise is priced by arrangement (from 2,000 USD a month): contact sales to agree its terms; the operator then moves the tenant to it',
  );

/**
 * An admin's plan change: a dearer plan at once once its prorated charge is paid (confirmed by
 * the provider's webhook), a cheaper one at the end of the period, the current one cancels a
 * pending change.
 */
export async function changePlan(deps: BillingDeps, by: BillingActor, planId: PlanId): Promise<PlanChangeOutcome> {
  const provider = deps.provider;
  if (!provider) throw notConfigured();
  const now = deps.clock();
  await applyDueChanges(deps, now, by.tenant.id);
  const tenant = (await findTenant(deps.db, by.tenant.id))!;
  if (planId === 'plan_enterprise' || tenant.plan === 'plan_enterprise') throw enterpriseRefusal();
  const actor: ChangeActor = { type: 'user', id: by.userId, requestId: by.requestId };
  const view = () => subscriptionOf(deps, tenant.id);
  const requestKey = `${tenant.id}:${by.requestId ?? newId('req')}`;

  if (planId === tenant.plan) {
    const canceled = await deps.db.transaction(async (tx) => {
      const account = await lockAccount(tx, tenant.id);
      if (!account.pendingPlanId) return false;
      await cancelPendingPlan(tx, {
        tenantId: tenant.id,
        planId,
        canceled: account.pendingPlanId,
        actor,
        key: `${requestKey}:plan_cancel`,
      });
      return true;
    });
    return { outcome: canceled ? 'canceled' : 'unchanged', subscription: await view() };
  }
  const pending = await pendingUpgrade(deps, tenant.id, planId);
  if (pending && pending.item !== planId) throw awaitingPayment(pending);

  if (planRank(planId) < planRank(tenant.plan)) {
    const above = await usageAbove(deps, tenant, planId);
    if (above.length > 0) {
      throw new AppError(
        'usage_exceeds_plan',
        `This period's usage already exceeds ${getPlan(planId).name}'s quota (${above.map((a) => `${a.metric} ${a.used} of ${a.limit}`).join(', ')})`,
        { exceeded: above },
      );
    }
    const { end } = subscriptionPeriod(now);
    await deps.db.transaction(async (tx) => {
      await lockAccount(tx, tenant.id);
      const raced = await findPendingUpgrade(tx, tenant.id);
      if (raced) throw awaitingPayment(raced);
      await schedulePlan(tx, {
        tenantId: tenant.id,
        from: tenant.plan,
        to: planId,
        effectiveAt: end,
        actor,
        key: `${requestKey}:plan_schedule`,
      });
    });
    return { outcome: 'scheduled', subscription: await view() };
  }

  const cents = proratedUpgradeCents(tenant.plan, planId, now);
  // A pending upgrade to this plan stays the one charge, even once the rest of the month is free.
  if (cents < MIN_CHARGE_CENTS && !pending) {
    await deps.db.transaction(async (tx) => {
      await lockAccount(tx, tenant.id);
      await applyPlan(tx, {
        tenantId: tenant.id,
        from: tenant.plan,
        to: planId,
        actor,
        paymentId: null,
        key: `${requestKey}:plan`,
      });
    });
    return { outcome: 'applied', subscription: await view() };
  }
  const { row, created } = await deps.db.transaction(async (tx) => {
    const inserted = await insertPayment(tx, {
      id: newId('pay'),
      tenantId: tenant.id,
      kind: 'upgrade',
      item: planId,
      amountCents: cents,
      currency: 'usd',
      idempotencyKey: `upgrade:${ulid()}`,
      requestedBy: by.userId,
    });
    // Who asked for a charge, as billing.credits_requested records a credit purchase.
    if (inserted.created) {
      await appendAudit(tx, {
        tenantId: tenant.id,
        actorType: 'user',
        actorId: by.userId,
        action: 'billing.upgrade_requested',
        targetType: 'payment',
        targetId: inserted.row.id,
        requestId: by.requestId,
        details: { planId, from: tenant.plan, amountUsd: usd(cents) },
      });
    }
    return inserted;
  });
  if (!created && row.item !== planId) throw awaitingPayment(row);
  const payment = await ensureProviderPayment(
    deps,
    provider,
    tenant,
    row,
    `Upgrade to ${getPlan(planId).name} (prorated)`,
  );
  return { outcome: 'payment_required', payment: toPaymentView(payment), subscription: await view() };
}
