import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Logger } from 'pino';
import { buyCredits } from '../../billing/credits.js';
import { changePlan, subscriptionOf } from '../../billing/subscription.js';
import type { BillingDeps } from '../../billing/types.js';
import { handleProviderWebhook } from '../../billing/webhook.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv, AuthContext } from '../context.js';
import { access } from '../middleware/access.js';
import {
  BuyCreditsBody,
  ChangePlanBody,
  IdempotencyHeader,
  Payment,
  PlanChange,
  Subscription,
  WebhookHeaders,
  WebhookReceipt,
} from '../schemas/billing.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';

/** The app's dependencies with billing's: its payment provider (none when self-hosted). */
export type BillingAppDeps = AppDeps & { billing?: Pick<BillingDeps, 'provider'> };

/** A provider event is small; a bigger body is not one. */
const MAX_WEBHOOK_BYTES = 256 * 1024;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

const getSubscriptionRoute = createRoute({
  method: 'get',
  path: '/v1/billing/subscription',
  tags: ['billing'],
  summary: "The tenant's plan, period, usage, credits and pending change",
  ...access('member'),
  responses: { 200: jsonResponse(Subscription, 'The subscription'), ...errorResponses(401, 403) },
});

const changePlanRoute = createRoute({
  method: 'post',
  path: '/v1/billing/subscription',
  tags: ['billing'],
  summary:
    'Change plan: an upgrade applies once its prorated charge is paid, a downgrade at the end of the period (409 usage_exceeds_plan, plan_by_arrangement, billing_not_configured)',
  ...access('admin'),
  request: { body: { required: true, content: { 'application/json': { schema: ChangePlanBody } } } },
  responses: {
    200: jsonResponse(PlanChange, 'Applied, scheduled, canceled or unchanged'),
    202: jsonResponse(PlanChange, 'The upgrade awaits its payment (confirmed by the provider webhook)'),
    ...errorResponses(400, 401, 403, 409, 502),
  },
});

const buyCreditsRoute = createRoute({
  method: 'post',
  path: '/v1/billing/credits',
  tags: ['billing'],
  summary: 'Buy a credit pack for this period (Idempotency-Key required); credits apply when the payment is confirmed',
  ...access('admin'),
  request: {
    headers: IdempotencyHeader,
    body: { required: true, content: { 'application/json': { schema: BuyCreditsBody } } },
  },
  responses: {
    202: jsonResponse(Payment, 'The payment, pending until the provider confirms it'),
    200: jsonResponse(Payment, 'A retry of the same Idempotency-Key: the same payment'),
    ...errorResponses(400, 401, 403, 409, 502),
  },
});

const webhookRoute = createRoute({
  method: 'post',
  path: '/v1/billing/webhook',
  tags: ['billing'],
  summary:
    "The payment provider's signed webhook (a Stripe Event as raw JSON, verified with STRIPE_WEBHOOK_SECRET; once per event id)",
  request: { headers: WebhookHeaders },
  responses: { 200: jsonResponse(WebhookReceipt, 'Received'), ...errorResponses(400, 409, 413) },
});

function billingOf(deps: AppDeps, logger: Logger | undefined): BillingDeps {
  return {
    db: deps.db,
    clock: deps.clock,
    logger: logger ?? deps.logger,
    provider: (deps as BillingAppDeps).billing?.provider,
  };
}

const actorOf = (auth: AuthContext, requestId: string | undefined) => ({
  tenant: auth.tenant,
  userId: auth.userId,
  requestId: requestId ?? null,
});

export function registerBillingRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(getSubscriptionRoute, async (c) =>
    c.json(await subscriptionOf(billingOf(deps, c.var.logger), c.var.auth.tenantId), 200),
  );

  app.openapi(changePlanRoute, async (c) => {
    const { planId } = c.req.valid('json');
    const result = await changePlan(billingOf(deps, c.var.logger), actorOf(c.var.auth, c.var.requestId), planId);
    return c.json(result, result.outcome === 'payment_required' ? 202 : 200);
  });

  app.openapi(buyCreditsRoute, async (c) => {
    const { pack } = c.req.valid('json');
    const key = c.req.valid('header')['idempotency-key'];
    if (!key || !IDEMPOTENCY_KEY.test(key)) {
      throw new AppError(
        'validation_error',
        'The Idempotency-Key header is required: 1 to 255 visible ASCII characters, new for each purchase',
      );
    }
    const { payment, created } = await buyCredits(
      billingOf(deps, c.var.logger),
      actorOf(c.var.auth, c.var.requestId),
      pack,
      key,
    );
    return c.json(payment, created ? 202 : 200);
  });
}

/**
 * The provider's webhook: no bearer token (its signature is the credential), so it is registered
 * before the api's authentication.
 */
export function registerBillingWebhookRoute(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(webhookRoute, async (c) => {
    if (Number(c.req.header('content-length') ?? 0) > MAX_WEBHOOK_BYTES) {
      throw new AppError('payload_too_large', 'A provider webhook is at most 256 KiB');
    }
    const raw = await c.req.text();
    if (raw.length > MAX_WEBHOOK_BYTES)
      throw new AppError('payload_too_large', 'A provider webhook is at most 256 KiB');
    return c.json(
      await handleProviderWebhook(billingOf(deps, c.var.logger), raw, c.req.valid('header')['stripe-signature']),
      200,
    );
  });
}
