/**
 * The api as a deployment with a payment provider runs it, against Stripe's official stripe-mock:
 * the test service's deps with a Stripe provider, on a real HTTP server, and the signed Stripe
 * events the billing tests deliver to its webhook.
 */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import Stripe from 'stripe';
import { createApp } from '../../src/api/app.js';
import { createStripeProvider } from '../../src/billing/provider.js';
import { startTestService, type ApiResponse, type TestService } from './service.js';
import { startStripeMock, type StripeMock } from './stripe-mock.js';

export interface PaymentRef {
  providerPaymentId: string;
  amountUsd: number;
  tenantId: string;
  paymentId: string;
}

export type PaymentEventType = 'payment_intent.succeeded' | 'payment_intent.payment_failed';

export interface PaymentEvent extends Record<string, unknown> {
  id: string;
  type: PaymentEventType;
}

export interface BillingApi {
  svc: TestService;
  mock: StripeMock;
  api(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> },
  ): Promise<ApiResponse>;
  /** A Stripe event as Stripe sends it, around the PaymentIntent stripe-mock serves, made to match ours. */
  paymentEvent(
    type: PaymentEventType,
    payment: PaymentRef,
    overrides?: { id?: string; amount?: number },
  ): Promise<PaymentEvent>;
  /** Posts the event to the webhook, signed with the secret unless told otherwise (`null`: unsigned). */
  deliver(
    event: unknown,
    options?: { secret?: string; timestamp?: number; signature?: string | null },
  ): Promise<ApiResponse>;
  /** The `stripe-signature` header Stripe would send for this payload. */
  sign(payload: string, options?: { secret?: string; timestamp?: number }): string;
  stop(): Promise<void>;
}

const SECRET_KEY = 'sk_test_123';

export async function startBillingApi(options: { webhookSecret: string; clock?: () => Date }): Promise<BillingApi> {
  const [svc, mock] = await Promise.all([startTestService({ withoutWorker: true }), startStripeMock()]);
  const provider = createStripeProvider({
    secretKey: SECRET_KEY,
    apiUrl: new URL(mock.url),
    webhookSecret: options.webhookSecret,
    timeoutMs: 5_000,
    webhookToleranceSeconds: 300,
  });
  const app = createApp({
    ...svc.appDeps,
    ...(options.clock ? { clock: options.clock } : {}),
    billing: { provider },
  });
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const stripe = new Stripe(SECRET_KEY);

  const api: BillingApi['api'] = async (method, path, opts = {}) => {
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
  };

  const sign: BillingApi['sign'] = (payload, signing = {}) =>
    stripe.webhooks.generateTestHeaderString({
      payload,
      secret: signing.secret ?? options.webhookSecret,
      ...(signing.timestamp ? { timestamp: signing.timestamp } : {}),
    });

  return {
    svc,
    mock,
    api,
    sign,
    async paymentEvent(type, payment, overrides = {}) {
      const served = (await (
        await fetch(`${mock.url}/v1/payment_intents/${payment.providerPaymentId}`, {
          headers: { authorization: `Bearer ${SECRET_KEY}` },
        })
      ).json()) as Stripe.PaymentIntent;
      const failed = type === 'payment_intent.payment_failed';
      const cents = Math.round(payment.amountUsd * 100);
      const intent = {
        ...served,
        id: payment.providerPaymentId,
        amount: overrides.amount ?? cents,
        amount_received: failed ? 0 : cents,
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
    },
    deliver(event, signing = {}) {
      const payload = JSON.stringify(event);
      const header = signing.signature === null ? undefined : (signing.signature ?? sign(payload, signing));
      return api('POST', '/v1/billing/webhook', {
        raw: payload,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          ...(header ? { 'stripe-signature': header } : {}),
        },
      });
    },
    async stop() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await mock.stop();
      await svc.stop();
    },
  };
}
