/** The changes billing makes, each with its audit entry and event, inside the caller's transaction. */
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { savePendingChange, setTenantPlan } from '../db/repositories/billing.js';
import { addCredits } from '../db/repositories/usage.js';
import type { ActorType } from '../db/schema/audit.js';
import { creditPacks, type CreditPackId, type PlanId } from '../domain/plans.js';
import { appendEventUnchecked } from '../outbox/append.js';

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/** Who made a change: a user through the api, the provider's webhook, housekeeping, an operator. */
export interface ChangeActor {
  type: ActorType;
  id: string;
  requestId?: string | null;
}

/** Billing's event types (the documented list, docs/billing.md). */
export const billingEventTypes = [
  'billing.plan_changed',
  'billing.plan_change_scheduled',
  'billing.plan_change_canceled',
  'billing.credits_purchased',
  'billing.payment_failed',
] as const;
type BillingEventType = (typeof billingEventTypes)[number];

async function record(
  tx: Tx,
  args: {
    tenantId: string;
    actor: ChangeActor;
    type: BillingEventType;
    targetType: string;
    targetId: string;
    payload: Record<string, unknown>;
    key: string;
  },
): Promise<void> {
  const { tenantId, actor } = args;
  await appendEventUnchecked(tx, {
    tenantId,
    type: args.type,
    incidentId: null,
    payload: { ...args.payload, actorType: actor.type, actorId: actor.id },
    idempotencyKey: args.key,
  });
  await appendAudit(tx, {
    tenantId,
    actorType: actor.type,
    actorId: actor.id,
    action: args.type,
    targetType: args.targetType,
    targetId: args.targetId,
    requestId: actor.requestId ?? null,
    details: args.payload,
    idempotencyKey: `${args.key}:audit`,
  });
}

/** Moves the tenant to a plan now (quotas and rate limit follow its row) and drops any pending change. */
export async function applyPlan(
  tx: Tx,
  args: { tenantId: string; from: PlanId; to: PlanId; actor: ChangeActor; paymentId: string | null; key: string },
): Promise<void> {
  await setTenantPlan(tx, args.tenantId, args.to);
  await savePendingChange(tx, args.tenantId, null);
  await record(tx, {
    tenantId: args.tenantId,
    actor: args.actor,
    type: 'billing.plan_changed',
    targetType: 'tenant',
    targetId: args.tenantId,
    payload: { from: args.from, to: args.to, paymentId: args.paymentId },
    key: args.key,
  });
}

export async function schedulePlan(
  tx: Tx,
  args: { tenantId: string; from: PlanId; to: PlanId; effectiveAt: Date; actor: ChangeActor; key: string },
): Promise<void> {
  await savePendingChange(tx, args.tenantId, { planId: args.to, effectiveAt: args.effectiveAt });
  await record(tx, {
    tenantId: args.tenantId,
    actor: args.actor,
    type: 'billing.plan_change_scheduled',
    targetType: 'tenant',
    targetId: args.tenantId,
    payload: { from: args.from, to: args.to, effectiveAt: args.effectiveAt.toISOString() },
    key: args.key,
  });
}

export async function cancelPendingPlan(
  tx: Tx,
  args: { tenantId: string; planId: PlanId; canceled: PlanId; actor: ChangeActor; key: string },
): Promise<void> {
  await savePendingChange(tx, args.tenantId, null);
  await record(tx, {
    tenantId: args.tenantId,
    actor: args.actor,
    type: 'billing.plan_change_canceled',
    targetType: 'tenant',
    targetId: args.tenantId,
    payload: { planId: args.planId, canceled: args.canceled },
    key: args.key,
  });
}

/** Adds a pack's units to the period's credits. */
export async function grantCredits(
  tx: Tx,
  args: {
    tenantId: string;
    pack: CreditPackId;
    period: string;
    actor: ChangeActor;
    paymentId: string | null;
    amountUsd: number;
    key: string;
  },
): Promise<void> {
  const pack = creditPacks[args.pack];
  await addCredits(tx, { tenantId: args.tenantId, period: args.period, metric: pack.metric, units: pack.units });
  await record(tx, {
    tenantId: args.tenantId,
    actor: args.actor,
    type: 'billing.credits_purchased',
    targetType: args.paymentId ? 'payment' : 'tenant',
    targetId: args.paymentId ?? args.tenantId,
    payload: {
      pack: args.pack,
      metric: pack.metric,
      units: pack.units,
      period: args.period,
      paymentId: args.paymentId,
      amountUsd: args.amountUsd,
    },
    key: args.key,
  });
}

export async function recordPaymentFailed(
  tx: Tx,
  args: { tenantId: string; paymentId: string; kind: string; item: string; amountUsd: number; reason: string },
): Promise<void> {
  await record(tx, {
    tenantId: args.tenantId,
    actor: { type: 'system', id: 'payment_provider' },
    type: 'billing.payment_failed',
    targetType: 'payment',
    targetId: args.paymentId,
    payload: {
      paymentId: args.paymentId,
      kind: args.kind,
      item: args.item,
      amountUsd: args.amountUsd,
      reason: args.reason,
    },
    key: `${args.paymentId}:failed`,
  });
}
