import { and, eq, like } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyDueChanges } from '../../src/billing/subscription.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { billingPayments } from '../../src/db/schema/billing.js';
import { events } from '../../src/db/schema/events.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { notifications } from '../../src/db/schema/remediation.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { proratedUpgradeCents, subscriptionPeriod, usagePeriod } from '../../src/domain/plans.js';
import { expectConformsToDocument } from '../helpers/openapi-conformance.js';
import { startBillingApi, type BillingApi } from '../helpers/billing-api.js';
import type { ApiResponse, TestService } from '../helpers/service.js';
import type { StripeMock } from '../helpers/stripe-mock.js';

const WEBHOOK_SECRET = 'whsec_test_billing_0123456789';

let svc: TestService;
let mock: StripeMock;
let billing: BillingApi;

beforeAll(async () => {
  billing = await startBillingApi({ webhookSecret: WEBHOOK_SECRET });
  ({ svc, mock } = billing);
});
afterAll(() => billing?.stop());

const api: BillingApi['api'] = (...args) => billing.api(...args);
const paymentEvent: BillingApi['paymentEvent'] = (...args) => billing.paymentEvent(...args);
const deliver: BillingApi['deliver'] = (...args) => billing.deliver(...args);

const buy = (token: string, pack: string, key?: string) =>
  api('POST', '/v1/billing/credits', {
    token,
    body: { pack },
    ...(key ? { headers: { 'idempotency-key': key } } : {}),
  });

const subscription = async (token: string) => (await api('GET', '/v1/billing/subscription', { token })).body;

async function setUsage(tenantId: string, metric: 'events' | 'investigations', count: number) {
  await svc.database.db
    .insert(usageCounters)
    .values({ tenantId, period: usagePeriod(new Date()), metric, count })
    .onConflictDoUpdate({
      target: [usageCounters.tenantId, usageCounters.period, usageCounters.metric],
      set: { count },
    });
}

describe('self-hosted (no payment provider)', () => {
  it('shows the subscription, and refuses plan changes and purchases with 409 billing_not_configured', async () => {
    const t = await svc.newTenant({ plan: 'plan_pro' });
    const got = await svc.api('GET', '/v1/billing/subscription', { token: t.member });
    expect(got.status).toBe(200);
    const { start, end } = subscriptionPeriod(new Date());
    expect(got.body).toEqual({
      planId: 'plan_pro',
      status: 'active',
      currentPeriodStart: start.toISOString(),
      currentPeriodEnd: end.toISOString(),
      usage: {
        investigations: { used: 0, limit: 60 },
        events: { used: 0, limit: 3000 },
        chat: { used: 0, limit: 1000 },
      },
      credits: { investigations: 0, events: 0 },
      pendingChange: null,
    });
    const plan = await svc.api('POST', '/v1/billing/subscription', {
      token: t.admin,
      body: { planId: 'plan_business' },
    });
    expect(plan.status).toBe(409);
    expect(plan.body.error).toBe('billing_not_configured');
    expect(plan.body.message).toMatch(/CLI \(tenant plan, tenant credits\)/);
    const credits = await svc.api('POST', '/v1/billing/credits', {
      token: t.admin,
      body: { pack: 'events_1000' },
      headers: { 'idempotency-key': 'k-1' },
    });
    expect([credits.status, credits.body.error]).toEqual([409, 'billing_not_configured']);
    const hook = await svc.api('POST', '/v1/billing/webhook', {
      rawBody: '{}',
      headers: { 'stripe-signature': 't=1,v1=x' },
    });
    expect([hook.status, hook.body.error]).toEqual([409, 'billing_not_configured']);
    // Bad input is still judged first.
    const bad = await svc.api('POST', '/v1/billing/subscription', { token: t.admin, body: { planId: 'plan_gold' } });
    expect([bad.status, bad.body.error]).toEqual([400, 'validation_error']);
  });
});

describe('roles and input', () => {
  it('lets members read and only admins buy or change plan; judges the body and Idempotency-Key', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    expect((await api('GET', '/v1/billing/subscription')).status).toBe(401);
    expect((await api('GET', '/v1/billing/subscription', { token: t.member })).status).toBe(200);
    const member = await api('POST', '/v1/billing/subscription', { token: t.member, body: { planId: 'plan_pro' } });
    expect([member.status, member.body.error]).toEqual([403, 'forbidden']);
    expect((await buy(t.member, 'events_1000', 'm-1')).status).toBe(403);
    const noKey = await buy(t.admin, 'events_1000');
    expect([noKey.status, noKey.body.error]).toEqual([400, 'validation_error']);
    expect(noKey.body.message).toMatch(/Idempotency-Key header is required/);
    const badPack = await buy(t.admin, 'events_5', 'k-2');
    expect([badPack.status, badPack.body.error]).toEqual([400, 'validation_error']);
    const extra = await api('POST', '/v1/billing/credits', {
      token: t.admin,
      body: { pack: 'events_1000', price: 1 },
      headers: { 'idempotency-key': 'k-3' },
    });
    expect([extra.status, extra.body.error]).toEqual([400, 'validation_error']);
    expect(
      await svc.database.db.select().from(billingPayments).where(eq(billingPayments.tenantId, t.tenantId)),
    ).toEqual([]);
  });
});

describe('credit purchase and the provider webhook', () => {
  it('makes one payment per Idempotency-Key, charged once at the provider, even under concurrent retries', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const before = mock.requests.length;
    const answers = await Promise.all(Array.from({ length: 5 }, () => buy(t.admin, 'investigations_10', 'order-7')));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 202]);
    const ids = new Set(answers.map((a) => a.body.paymentId));
    expect(ids.size).toBe(1);
    const [row] = await svc.database.db.select().from(billingPayments).where(eq(billingPayments.tenantId, t.tenantId));
    expect(row).toMatchObject({ kind: 'credits', item: 'investigations_10', amountCents: 4900, status: 'pending' });
    expect(answers.every((a) => a.body.providerPaymentId === row!.providerPaymentId)).toBe(true);
    // Every PaymentIntent request for it carried the one provider idempotency key: one charge.
    const intents = mock.requests.slice(before).filter((r) => r.path === '/v1/payment_intents');
    expect(intents.length).toBeGreaterThanOrEqual(1);
    expect(new Set(intents.map((r) => r.idempotencyKey))).toEqual(new Set([`payment:${row!.id}`]));
    expect(new URLSearchParams(intents[0]!.body).get('amount')).toBe('4900');
    // The same key for another pack is a conflict; another tenant's same key is its own purchase.
    const other = await buy(t.admin, 'events_1000', 'order-7');
    expect([other.status, other.body.error]).toEqual([409, 'conflict']);
    const u = await svc.newTenant({ plan: 'plan_starter' });
    const theirs = await buy(u.admin, 'investigations_10', 'order-7');
    expect(theirs.status).toBe(202);
    expect(theirs.body.paymentId).not.toBe(row!.id);
    const audited = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, t.tenantId), eq(auditLog.action, 'billing.credits_requested')));
    expect(audited).toHaveLength(1);
  });

  it('answers 502 when the provider fails, and the retry with the same key completes the same payment', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    mock.failing = true;
    const failed = await buy(t.admin, 'events_1000', 'retry-1').finally(() => (mock.failing = false));
    expect([failed.status, failed.body.error]).toEqual([502, 'provider_unavailable']);
    const retried = await buy(t.admin, 'events_1000', 'retry-1');
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ status: 'pending', amountUsd: 29 });
    expect(retried.body.providerPaymentId).toMatch(/^pi_/);
    const rows = await svc.database.db.select().from(billingPayments).where(eq(billingPayments.tenantId, t.tenantId));
    expect(rows).toHaveLength(1);
  });

  it('applies credits only on a verified, fresh webhook, once per event id; credits are used after the quota', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    await api('GET', '/v1/billing/subscription', { token: t.admin });
    const bought = await buy(t.admin, 'events_1000', 'events-1');
    expect(bought.status).toBe(202);
    const payment = { ...bought.body, tenantId: t.tenantId };
    const event = await paymentEvent('payment_intent.succeeded', payment);

    const unsigned = await deliver(event, { signature: null });
    expect([unsigned.status, unsigned.body.error]).toEqual([400, 'invalid_signature']);
    const forged = await deliver(event, { secret: 'whsec_someone_else' });
    expect([forged.status, forged.body.error]).toEqual([400, 'invalid_signature']);
    const replayed = await deliver(event, { timestamp: Math.floor(Date.now() / 1000) - 600 });
    expect([replayed.status, replayed.body.error]).toEqual([400, 'invalid_signature']);
    expect(replayed.body.message).toMatch(/tolerance/i);
    const tampered = await deliver(
      { ...event, id: 'evt_tampered' },
      { signature: billing.sign(JSON.stringify(event)) },
    );
    expect(tampered.status).toBe(400);
    const mismatch = await deliver(await paymentEvent('payment_intent.succeeded', payment, { amount: 100 }));
    expect(mismatch.body.outcome).toBe('ignored');
    expect((await subscription(t.admin)).credits.events).toBe(0);

    const first = await deliver(event);
    expect([first.status, first.body]).toEqual([200, { received: true, eventId: event.id, outcome: 'applied' }]);
    const again = await deliver(event);
    expect(again.body.outcome).toBe('duplicate');
    const sameConcurrently = await paymentEvent('payment_intent.succeeded', payment);
    const both = await Promise.all([deliver(sameConcurrently), deliver(sameConcurrently)]);
    expect(both.map((b) => b.body.outcome).sort()).toEqual(['duplicate', 'ignored']);
    expect((await subscription(t.admin)).credits).toEqual({ investigations: 0, events: 1000 });
    const [row] = await svc.database.db.select().from(billingPayments).where(eq(billingPayments.id, payment.paymentId));
    expect(row!.status).toBe('succeeded');
    const emitted = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.tenantId, t.tenantId), eq(events.type, 'billing.credits_purchased')));
    expect(emitted).toHaveLength(1);
    expect(emitted[0]!.payload).toMatchObject({ pack: 'events_1000', units: 1000, paymentId: payment.paymentId });

    // At the plan's 500 events, manual creation goes on with the credits, then stops when they are used.
    await setUsage(t.tenantId, 'events', 500);
    const opened = await api('POST', '/v1/incidents/chat', {
      token: t.admin,
      body: { title: 'Checkout 502s', description: 'Checkout answers 502 to one request in ten since 14:02 UTC' },
    });
    expect(opened.status).toBe(201);
    expect((await subscription(t.admin)).credits.events).toBe(999);
    await setUsage(t.tenantId, 'events', 1500);
    const refused = await api('POST', '/v1/incidents/chat', {
      token: t.admin,
      body: { title: 'Checkout 502s again', description: 'Checkout answers 502 to one request in ten since 15:02 UTC' },
    });
    expect([refused.status, refused.body.error]).toEqual([429, 'event_quota_exceeded']);
    expect((await subscription(t.admin)).credits.events).toBe(0);
  });

  it('keeps the tenant unchanged on a failed payment and tells its admins; another tenant cannot settle it', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    await api('GET', '/v1/billing/subscription', { token: t.admin }); // the admin is now known to the service
    const bought = await buy(t.admin, 'investigations_50', 'inv-50');
    const payment = { ...bought.body, tenantId: t.tenantId };
    const u = await svc.newTenant({ plan: 'plan_starter' });
    const crossTenant = await deliver(
      await paymentEvent('payment_intent.succeeded', { ...payment, tenantId: u.tenantId }),
    );
    expect(crossTenant.body.outcome).toBe('ignored');
    expect((await subscription(u.admin)).credits.investigations).toBe(0);

    const failed = await deliver(await paymentEvent('payment_intent.payment_failed', payment));
    expect(failed.body.outcome).toBe('failed');
    const [row] = await svc.database.db.select().from(billingPayments).where(eq(billingPayments.id, payment.paymentId));
    expect(row).toMatchObject({ status: 'failed', failureMessage: 'Your card was declined.' });
    expect((await subscription(t.admin)).credits.investigations).toBe(0);
    const told = await svc.database.db.select().from(notifications).where(eq(notifications.tenantId, t.tenantId));
    expect(told.map((n) => [n.userId, n.type])).toEqual([['user-admin', 'billing.payment_failed']]);
    const listed = await api('GET', '/v1/notifications', { token: t.admin });
    expect(listed.body.items).toMatchObject([
      {
        type: 'billing.payment_failed',
        title: 'Payment failed',
        body: 'The payment of 199 USD for investigations_50 failed (Your card was declined.); nothing changed.',
      },
    ]);
    // Another declined attempt changes nothing and tells no one again (a later success applies:
    // test/billing/review.test.ts).
    const again = await deliver(await paymentEvent('payment_intent.payment_failed', payment));
    expect(again.body.outcome).toBe('ignored');
    expect((await subscription(t.admin)).credits.investigations).toBe(0);
    expect(
      await svc.database.db.select().from(notifications).where(eq(notifications.tenantId, t.tenantId)),
    ).toHaveLength(1);
  });
});

describe('plan changes', () => {
  it('upgrades once the prorated charge is paid: quotas and rate limit follow at once', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const from = new Date();
    const asked = await api('POST', '/v1/billing/subscription', { token: t.admin, body: { planId: 'plan_pro' } });
    const to = new Date();
    expect(asked.status).toBe(202);
    expect(asked.body.outcome).toBe('payment_required');
    expect(asked.body.subscription.planId).toBe('plan_starter');
    const cents = Math.round(asked.body.payment.amountUsd * 100);
    expect(cents).toBeLessThanOrEqual(proratedUpgradeCents('plan_starter', 'plan_pro', from));
    expect(cents).toBeGreaterThanOrEqual(proratedUpgradeCents('plan_starter', 'plan_pro', to));
    const again = await api('POST', '/v1/billing/subscription', { token: t.admin, body: { planId: 'plan_pro' } });
    expect(again.body.payment.paymentId).toBe(asked.body.payment.paymentId);
    const other = await api('POST', '/v1/billing/subscription', { token: t.admin, body: { planId: 'plan_business' } });
    expect([other.status, other.body.error]).toEqual([409, 'conflict']);

    const paid = await deliver(
      await paymentEvent('payment_intent.succeeded', { ...asked.body.payment, tenantId: t.tenantId }),
    );
    expect(paid.body.outcome).toBe('applied');
    const now = await api('GET', '/v1/billing/subscription', { token: t.admin });
    expect(now.body).toMatchObject({
      planId: 'plan_pro',
      usage: { investigations: { limit: 60 }, events: { limit: 3000 } },
    });
    expect(now.headers.get('x-ratelimit-limit')).toBe('500');
    const [tenant] = await svc.database.db.select().from(tenants).where(eq(tenants.id, t.tenantId));
    expect(tenant!.plan).toBe('plan_pro');
    const audited = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, t.tenantId), like(auditLog.action, 'billing.plan_%')));
    expect(audited.map((a) => [a.action, a.details])).toEqual([
      ['billing.plan_changed', { from: 'plan_starter', to: 'plan_pro', paymentId: asked.body.payment.paymentId }],
    ]);
  });

  it('downgrades at the end of the period, refused when usage already exceeds the smaller plan', async () => {
    const t = await svc.newTenant({ plan: 'plan_business' });
    await setUsage(t.tenantId, 'investigations', 20);
    const over = await api('POST', '/v1/billing/subscription', { token: t.admin, body: { planId: 'plan_starter' } });
    expect([over.status, over.body.error]).toEqual([409, 'usage_exceeds_plan']);
    expect(over.body.details.exceeded).toEqual([{ metric: 'investigations', used: 20, limit: 15 }]);

    const down = await api('POST', '/v1/billing/subscription', { token: t.admin, body: { planId: 'plan_pro' } });
    const { end } = subscriptionPeriod(new Date());
    expect([down.status, down.body.outcome]).toEqual([200, 'scheduled']);
    expect(down.body.subscription).toMatchObject({
      planId: 'plan_business',
      pendingChange: { planId: 'plan_pro', effectiveAt: end.toISOString() },
    });
    // Choosing the current plan cancels it; choosing the cheaper one again schedules it again.
    const kept = await api('POST', '/v1/billing/subscription', { token: t.admin, body: { planId: 'plan_business' } });
    expect([kept.body.outcome, kept.body.subscription.pendingChange]).toEqual(['canceled', null]);
    await api('POST', '/v1/billing/subscription', { token: t.admin, body: { planId: 'plan_pro' } });

    expect(await applyDueChanges(svc.appDeps, new Date(end.getTime() - 1), t.tenantId)).toBe(0);
    expect(await applyDueChanges(svc.appDeps, end, t.tenantId)).toBe(1);
    expect(await applyDueChanges(svc.appDeps, end, t.tenantId)).toBe(0);
    const after = await subscription(t.admin);
    expect([after.planId, after.pendingChange]).toEqual(['plan_pro', null]);
    const changed = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.tenantId, t.tenantId), like(events.type, 'billing.plan_%')));
    expect(changed.map((e) => e.type)).toEqual([
      'billing.plan_change_scheduled',
      'billing.plan_change_canceled',
      'billing.plan_change_scheduled',
      'billing.plan_changed',
    ]);
  });

  it('refuses plan_enterprise with a contact message', async () => {
    const t = await svc.newTenant({ plan: 'plan_pro' });
    const res = await api('POST', '/v1/billing/subscription', { token: t.admin, body: { planId: 'plan_enterprise' } });
    expect([res.status, res.body.error]).toEqual([409, 'plan_by_arrangement']);
    expect(res.body.message).toMatch(/contact sales/);
  });
});

describe('the webhook bounds', () => {
  it('refuses a body larger than any provider event with 413, before verifying it', async () => {
    const res = await api('POST', '/v1/billing/webhook', {
      raw: JSON.stringify({ id: 'evt_big', padding: 'x'.repeat(300 * 1024) }),
      headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
    });
    expect([res.status, res.body.error]).toEqual([413, 'payload_too_large']);
  });
});

describe('the OpenAPI document', () => {
  it('describes every billing answer as it is sent', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const conforms = (path: string, method: string, res: ApiResponse) =>
      expectConformsToDocument(svc, path, method, res.status, res.body);
    await conforms(
      '/v1/billing/subscription',
      'get',
      await api('GET', '/v1/billing/subscription', { token: t.member }),
    );
    const bought = await buy(t.admin, 'events_10000', 'doc-1');
    await conforms('/v1/billing/credits', 'post', bought);
    await conforms('/v1/billing/credits', 'post', await buy(t.admin, 'events_10000', 'doc-1'));
    const upgrade = await api('POST', '/v1/billing/subscription', {
      token: t.admin,
      body: { planId: 'plan_business' },
    });
    expect(upgrade.status).toBe(202);
    await conforms('/v1/billing/subscription', 'post', upgrade);
    const hook = await deliver(
      await paymentEvent('payment_intent.succeeded', { ...bought.body, tenantId: t.tenantId }),
    );
    await conforms('/v1/billing/webhook', 'post', hook);
    await conforms('/v1/billing/webhook', 'post', await deliver({}, { signature: 't=1,v1=00' }));
    const down = await svc.newTenant({ plan: 'plan_pro' });
    const scheduled = await api('POST', '/v1/billing/subscription', {
      token: down.admin,
      body: { planId: 'plan_starter' },
    });
    expect(scheduled.status).toBe(200);
    await conforms('/v1/billing/subscription', 'post', scheduled);
    const enterprise = await api('POST', '/v1/billing/subscription', {
      token: down.admin,
      body: { planId: 'plan_enterprise' },
    });
    await conforms('/v1/billing/subscription', 'post', enterprise);
  });
});
