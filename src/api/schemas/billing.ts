import { z } from '@hono/zod-openapi';
import { creditPackIds, planIds } from '../../domain/plans.js';

const Usage = z.object({ used: z.number().int(), limit: z.number().int() });

export const Subscription = z
  .object({
    planId: z.enum(planIds),
    status: z.enum(['active']),
    currentPeriodStart: z.string().openapi({ format: 'date-time' }),
    currentPeriodEnd: z.string().openapi({ format: 'date-time', description: 'A pending downgrade applies here' }),
    usage: z.object({ investigations: Usage, events: Usage, chat: Usage }),
    credits: z
      .object({ investigations: z.number().int(), events: z.number().int() })
      .openapi({ description: 'Credits left this period (used after the plan quota)' }),
    pendingChange: z
      .object({ planId: z.enum(planIds), effectiveAt: z.string().openapi({ format: 'date-time' }) })
      .nullable(),
  })
  .openapi('Subscription');

export const Payment = z
  .object({
    paymentId: z.string().openapi({ example: 'pay_01jx2v9m6r3k8q4w7e5t1y0z2a' }),
    kind: z.enum(['credits', 'upgrade']),
    item: z.string().openapi({ description: 'The credit pack, or the plan upgraded to' }),
    amountUsd: z.number(),
    currency: z.string(),
    status: z.enum(['pending', 'succeeded', 'failed']),
    providerPaymentId: z.string().nullable().openapi({ description: "The payment provider's PaymentIntent id" }),
    clientSecret: z
      .string()
      .nullable()
      .openapi({ description: 'While pending: confirms the payment with the provider (Stripe.js)' }),
    failureMessage: z.string().nullable(),
    createdAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Payment');

export const ChangePlanBody = z
  .object({ planId: z.enum(planIds).openapi({ example: 'plan_pro' }) })
  .strict()
  .openapi('ChangePlan');

export const PlanChange = z
  .object({
    outcome: z.enum(['unchanged', 'applied', 'scheduled', 'canceled', 'payment_required']),
    subscription: Subscription,
    payment: Payment.optional().openapi({
      description: 'The prorated charge of an upgrade (outcome payment_required)',
    }),
  })
  .openapi('PlanChange');

export const BuyCreditsBody = z
  .object({ pack: z.enum(creditPackIds).openapi({ example: 'investigations_10' }) })
  .strict()
  .openapi('BuyCredits');

export const IdempotencyHeader = z.object({
  'idempotency-key': z
    .string()
    .optional()
    .openapi({
      param: { in: 'header', required: true },
      description: 'Required: a retry with the same key is the same purchase (1 to 255 visible ASCII characters)',
    }),
});

export const WebhookHeaders = z.object({
  'stripe-signature': z
    .string()
    .optional()
    .openapi({ param: { in: 'header', required: true }, description: 't=…,v1=…' }),
});

export const WebhookReceipt = z
  .object({
    received: z.literal(true),
    eventId: z.string(),
    outcome: z.enum(['applied', 'failed', 'ignored', 'duplicate']),
  })
  .openapi('BillingWebhookReceipt');
