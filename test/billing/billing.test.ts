import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { and, eq, like } from 'drizzle-orm';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { createStripeProvider } from '../../src/billing/provider.js';
import { applyDueChanges } from '../../src/billing/subscription.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { billingPayments } from '../../src/db/schema/billing.js';
import { events } from '../../src/db/schema/events.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { notifications } from '../../src/db/schema/remediation.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { proratedUpgradeCents, subscriptionPeriod, usagePeriod } from '../../src/domain/plans.js';
import { startTestService, type ApiResponse, type TestService } from '../helpers/service.js';
import { startStripeMock, type StripeMock } from '../helpers/stripe-mock.js';

const WEBHOOK_SECRET = 'whsec_test_billing_0123456789';
const stripe = new Stripe('sk_test_123');

let svc: TestService;
let mock: StripeMock;
let server: ServerType;
let baseUrl: string;

beforeAll(async () => {
  [svc, mock] = await Promise.all([startTestService({ withoutWorker: true }), startStripeMock()]);
  const provider = createStripeProvider({
    secretKey: 'sk_test_123',
    apiUrl: new URL(mock.url),
    webhookSecret: WEBHOOK_SECRET,
    timeoutMs: 5_000,
    webhookToleranceSeconds: 300,
  });
  // The service as a provider-configured deployment runs it: the same deps, with the provider.
  const app = createApp({ ...svc.appDeps, billing: { provider } });
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await mock?.stop();
  await svc?.stop();
});

async function api(
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : text };
}

const buy = (token: string, pack: string, key?: string) =>
  api('POST', '/v1/billing/credits', {
    token,
    body: { pack },
    ...(key ? { headers: { 'idempotency-key': key } } : {}),
  });

/** A Stripe event as Stripe sends it, around the PaymentIntent stripe-mock serves, made to match ours. */
async function paymentEvent(
  type: 'payment_intent.succeeded' | 'payment_intent.payment_failed',
  payment: { providerPaymentId: string; amountUsd: number; tenantId: string; paymentId: string },
  overrides: { id?: string; amount?: number } = {},
) {
  const served = (await (
    await fetch(`${mock.url}/v1/payment_intents/${payment.providerPaymentId}`, {
      headers: { authorization: 'Bearer sk_test_123' },
    })
  ).json()) as Stripe.PaymentIntent;
  const failed = type === 'payment_intent.payment_failed';
  const intent = {
    ...served,
    id: payment.providerPaymentId,
    amount: overrides.amount ?? Math.round(payment.amountUsd * 100),
    amount_received: failed ? 0 : Math.round(payment.amountUsd * 100),
    currency: 'usd',
    status: failed ? 'requires_payment_method' : 'succeeded',
    metadata: { tenantId: payment.tenantId, paymentId: payment.paymentId },
    last_payment_error: failed
      ? { type: 'card_error', code: 'card_declined', message: 'Your card was declined.' }
      : null,
  };
  return {
    id: overrides.id ?? `evt_${Math.random().toString(36).slice(2, 16)}`,
    object: 'event',
    api_version: '2025-10-29.clover',
    created: Math.floor(Date.now() / 1000),
    data: { object: intent },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

function deliver(event: unknown, options: { secret?: string; timestamp?: number; signature?: string | null } = {}) {
  const payload = JSON.stringify(event);
  const header =
    options.signature === null
      ? undefined
      : (options.signature ??
        stripe.webhooks.generateTestHeaderString({
          payload,
          secret: options.secret ?? WEBHOOK_SECRET,
          ...(options.timestamp ? { timestamp: options.timestamp } : {}),
        }));
  return api('POST', '/v1/billing/webhook', {
    raw: payload,
    headers: { 'content-type': 'application/json; charset=utf-8', ...(header ? { 'stripe-signature': header } : {}) },
  });
}

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
