/**
 * Defects found reviewing the payments path: plan changes while an upgrade awaits its payment, a
 * payment confirmed after the plan moved past it, and a payment that succeeds after a declined
 * attempt (Stripe's PaymentIntent goes back to requires_payment_method and can be paid again).
 */
import { and, eq, like } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorSetPlan } from '../../src/billing/operator.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { billingPayments, billingWebhookEvents } from '../../src/db/schema/billing.js';
import { events } from '../../src/db/schema/events.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { subscriptionPeriod } from '../../src/domain/plans.js';
import { startBillingApi, type BillingApi } from '../helpers/billing-api.js';
import type { TestService } from '../helpers/service.js';
import type { StripeMock } from '../helpers/stripe-mock.js';

const WEBHOOK_SECRET = 'whsec_test_billing_review_0123456789';

let svc: TestService;
let mock: StripeMock;
/** The api's clock: real time unless a test moves it (to the last seconds of a month). */
let frozen: Date | null = null;
let billing: BillingApi;

beforeAll(async () => {
  billing = await startBillingApi({ webhookSecret: WEBHOOK_SECRET, clock: () => frozen ?? new Date() });
  ({ svc, mock } = billing);
});
afterAll(() => billing?.stop());

const api: BillingApi['api'] = (...args) => billing.api(...args);
const paymentEvent: BillingApi['paymentEvent'] = (...args) => billing.paymentEvent(...args);
const deliver: BillingApi['deliver'] = (...args) => billing.deliver(...args);

const askPlan = (token: string, planId: string) => api('POST', '/v1/billing/subscription', { token, body: { planId } });

const planOf = async (tenantId: string) =>
  (await svc.database.db.select().from(tenants).where(eq(tenants.id, tenantId)))[0]!.plan;

const paymentRow = async (paymentId: string) =>
  (await svc.database.db.select().from(billingPayments).where(eq(billingPayments.id, paymentId)))[0]!;

describe('a plan change while an upgrade awaits its payment', () => {
  it('refuses a downgrade with 409 conflict, so the paid upgrade does not silently drop it', async () => {
    const t = await svc.newTenant({ plan: 'plan_pro' });
    const up = await askPlan(t.admin, 'plan_business');
    expect([up.status, up.body.outcome]).toEqual([202, 'payment_required']);
    const down = await askPlan(t.admin, 'plan_starter');
    expect([down.status, down.body.error]).toEqual([409, 'conflict']);
    expect(down.body.message).toContain(up.body.payment.paymentId);
    expect((await api('GET', '/v1/billing/subscription', { token: t.admin })).body.pendingChange).toBeNull();
    const scheduled = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.tenantId, t.tenantId), eq(events.type, 'billing.plan_change_scheduled')));
    expect(scheduled).toHaveLength(0);
  });

  it('refuses a free end-of-month upgrade to another plan with 409, and the pending payment still applies alone', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const up = await askPlan(t.admin, 'plan_pro');
    expect(up.status).toBe(202);
    // 30 seconds before the period ends, starter to business costs less than the 0.50 USD minimum.
    frozen = new Date(subscriptionPeriod(new Date()).end.getTime() - 30_000);
    try {
      const other = await askPlan(t.admin, 'plan_business');
      expect([other.status, other.body.error]).toEqual([409, 'conflict']);
    } finally {
      frozen = null;
    }
    expect(await planOf(t.tenantId)).toBe('plan_starter');
    const paid = await deliver(
      await paymentEvent('payment_intent.succeeded', { ...up.body.payment, tenantId: t.tenantId }),
    );
    expect(paid.body.outcome).toBe('applied');
    expect(await planOf(t.tenantId)).toBe('plan_pro');
  });
});

describe('an upgrade confirmed after the plan moved past it', () => {
  it('does not move the tenant back down to the older, cheaper plan', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const up = await askPlan(t.admin, 'plan_pro');
    expect(up.status).toBe(202);
    // Terms agreed by hand meanwhile: the operator moves the tenant to business.
    expect(await operatorSetPlan(svc.database.db, t.tenantId, 'plan_business')).toEqual({ from: 'plan_starter' });

    const event = await paymentEvent('payment_intent.succeeded', { ...up.body.payment, tenantId: t.tenantId });
    const late = await deliver(event);
    expect([late.status, late.body.outcome]).toEqual([200, 'ignored']);
    expect(await planOf(t.tenantId)).toBe('plan_business');
    // The money was taken: the row says so, and the claimed event says why nothing applied.
    expect((await paymentRow(up.body.payment.paymentId)).status).toBe('succeeded');
    const [claimed] = await svc.database.db
      .select()
      .from(billingWebhookEvents)
      .where(eq(billingWebhookEvents.eventId, event.id));
    expect(claimed!.outcome).toMatch(/already on plan_business/);
    const changed = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.tenantId, t.tenantId), eq(events.type, 'billing.plan_changed')));
    expect(changed.map((e) => (e.payload as { to: string }).to)).toEqual(['plan_business']);
  });
});

describe('a payment that succeeds after a declined attempt', () => {
  it('applies the credits: a declined card leaves the PaymentIntent payable with another one', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const bought = await api('POST', '/v1/billing/credits', {
      token: t.admin,
      body: { pack: 'events_1000' },
      headers: { 'idempotency-key': 'declined-then-paid' },
    });
    expect(bought.status).toBe(202);
    const payment = { ...bought.body, tenantId: t.tenantId };
    const declined = await deliver(await paymentEvent('payment_intent.payment_failed', payment));
    expect(declined.body.outcome).toBe('failed');
    expect((await api('GET', '/v1/billing/subscription', { token: t.admin })).body.credits.events).toBe(0);

    const paid = await deliver(await paymentEvent('payment_intent.succeeded', payment));
    expect([paid.status, paid.body.outcome]).toEqual([200, 'applied']);
    expect((await api('GET', '/v1/billing/subscription', { token: t.admin })).body.credits.events).toBe(1000);
    expect(await paymentRow(payment.paymentId)).toMatchObject({ status: 'succeeded', failureMessage: null });
    // Once paid, a late decline of an earlier attempt changes nothing.
    const lateDecline = await deliver(await paymentEvent('payment_intent.payment_failed', payment));
    expect(lateDecline.body.outcome).toBe('ignored');
    expect((await paymentRow(payment.paymentId)).status).toBe('succeeded');
  });
});

describe('an upgrade that never reached the provider', () => {
  it('does not block another plan change: nobody holds a client secret to pay it', async () => {
    const t = await svc.newTenant({ plan: 'plan_pro' });
    mock.failing = true;
    try {
      const down = await askPlan(t.admin, 'plan_business');
      expect([down.status, down.body.error]).toEqual([502, 'provider_unavailable']);
    } finally {
      mock.failing = false;
    }
    const [stuck] = await svc.database.db
      .select()
      .from(billingPayments)
      .where(eq(billingPayments.tenantId, t.tenantId));
    expect(stuck).toMatchObject({ kind: 'upgrade', status: 'pending', providerPaymentId: null });

    const cheaper = await askPlan(t.admin, 'plan_starter');
    expect([cheaper.status, cheaper.body.outcome]).toEqual([200, 'scheduled']);
    expect(await paymentRow(stuck!.id)).toMatchObject({ status: 'failed', clientSecret: null });
    expect((await paymentRow(stuck!.id)).failureMessage).toMatch(/never reached the payment provider/);
    // The same upgrade asked again is a new charge, made at the provider this time.
    const again = await askPlan(t.admin, 'plan_business');
    expect([again.status, again.body.outcome]).toEqual([202, 'payment_required']);
    expect(again.body.payment.paymentId).not.toBe(stuck!.id);
    expect(again.body.payment.providerPaymentId).toMatch(/^pi_/);
  });

  it('still answers a retry of the same upgrade with the same payment', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    mock.failing = true;
    try {
      expect((await askPlan(t.admin, 'plan_pro')).status).toBe(502);
    } finally {
      mock.failing = false;
    }
    const [first] = await svc.database.db
      .select()
      .from(billingPayments)
      .where(eq(billingPayments.tenantId, t.tenantId));
    const retry = await askPlan(t.admin, 'plan_pro');
    expect([retry.status, retry.body.payment.paymentId]).toEqual([202, first!.id]);
    expect(retry.body.payment.providerPaymentId).toMatch(/^pi_/);
  });
});

describe('an upgrade asked', () => {
  it('is audited with who asked it and the charge, as a credit purchase is, once however often it is asked', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const up = await askPlan(t.admin, 'plan_pro');
    expect(up.status).toBe(202);
    expect((await askPlan(t.admin, 'plan_pro')).body.payment.paymentId).toBe(up.body.payment.paymentId);
    const audited = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, t.tenantId), like(auditLog.action, 'billing.%')));
    expect(audited.map((a) => [a.action, a.actorType, a.actorId, a.targetId, a.details])).toEqual([
      [
        'billing.upgrade_requested',
        'user',
        'user-admin',
        up.body.payment.paymentId,
        { planId: 'plan_pro', from: 'plan_starter', amountUsd: up.body.payment.amountUsd },
      ],
    ]);
  });
});
