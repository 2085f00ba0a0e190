import { and, eq, isNotNull, lte, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import {
  billingAccounts,
  billingPayments,
  billingWebhookEvents,
  type PaymentKind,
  type PaymentStatus,
} from '../schema/billing.js';
import { tenants } from '../schema/tenants.js';
import type { PlanId } from '../../domain/plans.js';

export type BillingAccountRow = typeof billingAccounts.$inferSelect;
export type PaymentRow = typeof billingPayments.$inferSelect;

export async function findAccount(db: Pick<Db, 'select'>, tenantId: string): Promise<BillingAccountRow | undefined> {
  const rows = await db.select().from(billingAccounts).where(eq(billingAccounts.tenantId, tenantId));
  return rows[0];
}

export async function saveCustomerId(db: Pick<Db, 'insert'>, tenantId: string, customerId: string): Promise<void> {
  await db
    .insert(billingAccounts)
    .values({ tenantId, providerCustomerId: customerId })
    .onConflictDoUpdate({
      target: billingAccounts.tenantId,
      set: { providerCustomerId: customerId, updatedAt: sql`now()` },
    });
}

/** Sets (or, with null, clears) the tenant's downgrade waiting for the end of the period. */
export async function savePendingChange(
  tx: Pick<Db, 'insert'>,
  tenantId: string,
  change: { planId: PlanId; effectiveAt: Date } | null,
): Promise<void> {
  const values = { pendingPlanId: change?.planId ?? null, pendingEffectiveAt: change?.effectiveAt ?? null };
  await tx
    .insert(billingAccounts)
    .values({ tenantId, ...values })
    .onConflictDoUpdate({ target: billingAccounts.tenantId, set: { ...values, updatedAt: sql`now()` } });
}

/** The tenants whose pending change is due at `now`. */
export async function dueChanges(db: Pick<Db, 'select'>, now: Date, tenantId?: string): Promise<string[]> {
  const rows = await db
    .select({ tenantId: billingAccounts.tenantId })
    .from(billingAccounts)
    .where(
      and(
        isNotNull(billingAccounts.pendingPlanId),
        lte(billingAccounts.pendingEffectiveAt, now),
        tenantId ? eq(billingAccounts.tenantId, tenantId) : undefined,
      ),
    );
  return rows.map((r) => r.tenantId);
}

/** Locks a tenant's billing row (made when missing) for the rest of the transaction. */
export async function lockAccount(tx: Pick<Db, 'insert' | 'select'>, tenantId: string): Promise<BillingAccountRow> {
  await tx.insert(billingAccounts).values({ tenantId }).onConflictDoNothing();
  const rows = await tx.select().from(billingAccounts).where(eq(billingAccounts.tenantId, tenantId)).for('update');
  return rows[0]!;
}

export async function setTenantPlan(tx: Pick<Db, 'update'>, tenantId: string, planId: PlanId): Promise<void> {
  await tx
    .update(tenants)
    .set({ plan: planId, updatedAt: sql`now()` })
    .where(eq(tenants.id, tenantId));
}

export interface NewPayment {
  id: string;
  tenantId: string;
  kind: PaymentKind;
  item: string;
  amountCents: number;
  currency: string;
  idempotencyKey: string;
  requestedBy: string;
}

/** Inserts the payment unless the tenant has one of that idempotency key (or a pending upgrade); the row either way. */
export async function insertPayment(
  db: Pick<Db, 'insert' | 'select'>,
  payment: NewPayment,
): Promise<{ row: PaymentRow; created: boolean }> {
  const inserted = await db.insert(billingPayments).values(payment).onConflictDoNothing().returning();
  if (inserted[0]) return { row: inserted[0], created: true };
  const existing =
    payment.kind === 'upgrade'
      ? await findPendingUpgrade(db, payment.tenantId)
      : await findPaymentByKey(db, payment.tenantId, payment.idempotencyKey);
  // Settled between the insert and the read: the caller's retry makes a new one.
  if (!existing) throw new Error('payment conflict vanished; retry');
  return { row: existing, created: false };
}

export async function findPaymentByKey(
  db: Pick<Db, 'select'>,
  tenantId: string,
  idempotencyKey: string,
): Promise<PaymentRow | undefined> {
  const rows = await db
    .select()
    .from(billingPayments)
    .where(and(eq(billingPayments.tenantId, tenantId), eq(billingPayments.idempotencyKey, idempotencyKey)));
  return rows[0];
}

export async function findPendingUpgrade(db: Pick<Db, 'select'>, tenantId: string): Promise<PaymentRow | undefined> {
  const rows = await db
    .select()
    .from(billingPayments)
    .where(
      and(
        eq(billingPayments.tenantId, tenantId),
        eq(billingPayments.kind, 'upgrade'),
        eq(billingPayments.status, 'pending'),
      ),
    );
  return rows[0];
}

/** Records the provider's payment of a row that has none yet; the row as it then is. */
export async function saveProviderPayment(
  db: Pick<Db, 'update' | 'select'>,
  args: { tenantId: string; paymentId: string; providerPaymentId: string; clientSecret: string | null },
): Promise<PaymentRow> {
  await db
    .update(billingPayments)
    .set({ providerPaymentId: args.providerPaymentId, clientSecret: args.clientSecret })
    .where(
      and(
        eq(billingPayments.tenantId, args.tenantId),
        eq(billingPayments.id, args.paymentId),
        sql`${billingPayments.providerPaymentId} is null`,
      ),
    );
  const rows = await db
    .select()
    .from(billingPayments)
    .where(and(eq(billingPayments.tenantId, args.tenantId), eq(billingPayments.id, args.paymentId)));
  return rows[0]!;
}

/**
 * Fails a pending payment the provider never answered for (no provider id, so no client secret was
 * handed out and nobody can pay it); false when it got one meanwhile or was settled.
 */
export async function abandonUnreachedPayment(
  db: Pick<Db, 'update'>,
  args: { tenantId: string; paymentId: string; reason: string },
): Promise<boolean> {
  const rows = await db
    .update(billingPayments)
    .set({ status: 'failed', failureMessage: args.reason, settledAt: sql`now()` })
    .where(
      and(
        eq(billingPayments.tenantId, args.tenantId),
        eq(billingPayments.id, args.paymentId),
        eq(billingPayments.status, 'pending'),
        sql`${billingPayments.providerPaymentId} is null`,
      ),
    )
    .returning({ id: billingPayments.id });
  return rows.length > 0;
}

export async function lockPayment(
  tx: Pick<Db, 'select'>,
  tenantId: string,
  paymentId: string,
): Promise<PaymentRow | undefined> {
  const rows = await tx
    .select()
    .from(billingPayments)
    .where(and(eq(billingPayments.tenantId, tenantId), eq(billingPayments.id, paymentId)))
    .for('update');
  return rows[0];
}

export async function settlePayment(
  tx: Pick<Db, 'update'>,
  args: { tenantId: string; paymentId: string; status: Exclude<PaymentStatus, 'pending'>; failureMessage?: string },
): Promise<void> {
  await tx
    .update(billingPayments)
    .set({ status: args.status, failureMessage: args.failureMessage ?? null, settledAt: sql`now()` })
    .where(and(eq(billingPayments.tenantId, args.tenantId), eq(billingPayments.id, args.paymentId)));
}

/** Claims a webhook event id; false when it was handled before (a redelivery). */
export async function claimWebhookEvent(
  tx: Pick<Db, 'insert'>,
  event: { eventId: string; type: string; tenantId: string | null; paymentId: string | null; outcome: string },
): Promise<boolean> {
  const rows = await tx
    .insert(billingWebhookEvents)
    .values(event)
    .onConflictDoNothing()
    .returning({ eventId: billingWebhookEvents.eventId });
  return rows.length > 0;
}
