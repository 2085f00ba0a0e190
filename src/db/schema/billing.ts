import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

const planEnum = ['plan_starter', 'plan_pro', 'plan_business', 'plan_enterprise'] as const;

/**
 * A tenant's billing state beside its plan (tenants.plan): its payment-provider customer and a
 * downgrade waiting for the end of the period. No row: no customer yet and nothing pending.
 */
export const billingAccounts = pgTable('billing_accounts', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id),
  providerCustomerId: text('provider_customer_id'),
  pendingPlanId: text('pending_plan_id', { enum: planEnum }),
  pendingEffectiveAt: timestamp('pending_effective_at', { withTimezone: true, precision: 3 }),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
});

export const paymentKinds = ['credits', 'upgrade'] as const;
export type PaymentKind = (typeof paymentKinds)[number];
export const paymentStatuses = ['pending', 'succeeded', 'failed'] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];

/**
 * One charge (`pay_…`): a credit pack or a prorated upgrade. It applies only when the provider's
 * signed webhook confirms it; `idempotencyKey` makes a retried purchase the same charge.
 */
export const billingPayments = pgTable(
  'billing_payments',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    kind: text('kind', { enum: paymentKinds }).notNull(),
    /** The credit pack (kind credits) or the plan upgraded to (kind upgrade). */
    item: text('item').notNull(),
    amountCents: integer('amount_cents').notNull(),
    currency: text('currency').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    providerPaymentId: text('provider_payment_id'),
    clientSecret: text('client_secret'),
    status: text('status', { enum: paymentStatuses }).notNull().default('pending'),
    failureMessage: text('failure_message'),
    requestedBy: text('requested_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    settledAt: timestamp('settled_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [
    uniqueIndex('billing_payments_tenant_key_idx').on(t.tenantId, t.idempotencyKey),
    // One upgrade awaiting payment per tenant: a second click is the same charge, not another.
    uniqueIndex('billing_payments_pending_upgrade_idx')
      .on(t.tenantId)
      .where(sql`kind = 'upgrade' and status = 'pending'`),
    index('billing_payments_tenant_created_idx').on(t.tenantId, t.createdAt),
  ],
);

/** Provider webhook events already handled, by the provider's event id (a redelivery is a no-op). */
export const billingWebhookEvents = pgTable('billing_webhook_events', {
  eventId: text('event_id').primaryKey(),
  type: text('type').notNull(),
  tenantId: text('tenant_id'),
  paymentId: text('payment_id'),
  outcome: text('outcome').notNull(),
  receivedAt: timestamp('received_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
});
