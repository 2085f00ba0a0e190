/** The changes billing makes, each with its audit entry and event, inside the caller's transaction. */
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { savePendingChange, setTenantPlan } from '../db/repositories/billing.js';
import { addCredits } from '../db/repositories/usage.js';
import type { ActorType } from '../db/schema/audit.js';
import { creditPacks, type CreditPackId, type PlanId } from '../domain/plans.js';
import { appendEvent } from '../outbox/append.js';
import type { BillingEventPayloads, BillingEventType, NewEvent } from '../outbox/events.js';

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/** Who made a change: a user through the api, the provider's webhook, housekeeping, an operator. */
export interface ChangeActor {
  type: ActorType;
  id: string;
  requestId?: string | null;
}

/** One of billing's events, its payload without the actor (`record` adds who made it). */
type BillingChange = {
  [T in BillingEventType]: { type: T; payload: Omit<BillingEventPayloads[T], 'actorType' | 'actorId'> };
}[BillingEventType];

/** The event (checked against the catalogue, src/outbox/events.ts) and its audit entry. */
async function record(
  tx: Tx,
  args: {
    tenantId: string;
    actor: ChangeActor;
    change: BillingChange;
    targetType: string;
    targetId: string;
    key: string;
  },
): Promise<void> {
  const { tenantId, actor, change } = args;
  const by = { actorType: actor.type, actorId: actor.id };
  await appendEvent(tx, withActor(change, by, { tenantId, incidentId: null, idempotencyKey: args.key }));
  await appendAudit(tx, {
    tenantId,
    actorType: actor.type,
    actorId: actor.id,
    action: change.type,
    targetType: args.targetType,
    targetId: args.targetId,
    requestId: actor.requestId ?? null,
    details: change.payload,
    idempotencyKey: `${args.key}:audit`,
  });
}

/** The change as an event of the catalogue; each branch keeps its type and payload together. */
function withActor(
  change: BillingChange,
  by: { actorType: string; actorId: string },
  row: { tenantId: string; incidentId: null; idempotencyKey: string },
): NewEvent {
  switch (change.type) {
    case 'billing.plan_changed':
      return { ...row, type: change.type, payload: { ...change.payload, ...by } };
    case 'billing.plan_change_scheduled':
      return { ...row, type: change.type, payload: { ...change.payload, ...by } };
    case 'billing.plan_change_canceled':
      return { ...row, type: change.type, payload: { ...change.payload, ...by } };
    case 'billing.credits_purchased':
      return { ...row, type: change.type, payload: { ...change.payload, ...by } };
    case 'billing.payment_failed':
      return { ...row, type: change.type, payload: { ...change.payload, ...by } };
  }
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
    change: { type: 'billing.plan_changed', payload: { from: args.from, to: args.to, paymentId: args.paymentId } },
    targetType: 'tenant',
    targetId: args.tenantId,
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
    change: {
      type: 'billing.plan_change_scheduled',
      payload: { from: args.from, to: args.to, effectiveAt: args.effectiveAt.toISOString() },
    },
    targetType: 'tenant',
    targetId: args.tenantId,
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
    change: { type: 'billing.plan_change_canceled', payload: { planId: args.planId, canceled: args.canceled } },
    targetType: 'tenant',
    targetId: args.tenantId,
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
    change: {
      type: 'billing.credits_purchased',
      payload: {
        pack: args.pack,
        metric: pack.metric,
        units: pack.units,
        period: args.period,
        paymentId: args.paymentId,
        amountUsd: args.amountUsd,
      },
    },
    targetType: args.paymentId ? 'payment' : 'tenant',
    targetId: args.paymentId ?? args.tenantId,
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
    change: {
      type: 'billing.payment_failed',
      payload: {
        paymentId: args.paymentId,
        kind: args.kind,
        item: args.item,
        amountUsd: args.amountUsd,
        reason: args.reason,
      },
    },
    targetType: 'payment',
    targetId: args.paymentId,
    key: `${args.paymentId}:failed`,
  });
}
