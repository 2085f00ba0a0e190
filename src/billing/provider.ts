import Stripe from 'stripe';
import { AppError } from '../errors.js';
import type { BillingSettings } from './settings.js';

/** A payment the provider holds: confirmed (or not) later, through its webhook. */
export interface ProviderPayment {
  id: string;
  clientSecret: string | null;
}

/** A verified webhook event, as the provider sent it. */
export type ProviderEvent = Stripe.Event;

/** What billing needs of a Stripe-compatible payment provider. */
export interface PaymentProvider {
  createCustomer(args: { tenantId: string; name: string }): Promise<string>;
  createPayment(args: {
    customerId: string;
    amountCents: number;
    currency: string;
    description: string;
    metadata: Record<string, string>;
    idempotencyKey: string;
  }): Promise<ProviderPayment>;
  /** The event of a signed webhook body; throws when the signature or its timestamp does not hold. */
  verifyWebhook(rawBody: string, signature: string): ProviderEvent;
  readonly webhookConfigured: boolean;
}

/** The provider did not answer, or refused: the caller may retry with the same Idempotency-Key. */
function unavailable(err: unknown): AppError {
  const reason = err instanceof Stripe.errors.StripeError ? `${err.type}: ${err.message}` : (err as Error).message;
  return new AppError('provider_unavailable', `The payment provider did not complete the request (${reason})`);
}

/** The official Stripe SDK against STRIPE_API_URL, every call bounded by STRIPE_TIMEOUT_MS. */
export function createStripeProvider(settings: BillingSettings): PaymentProvider {
  const url = settings.apiUrl;
  const stripe = new Stripe(settings.secretKey, {
    host: url.hostname,
    port: url.port || (url.protocol === 'https:' ? 443 : 80),
    protocol: url.protocol === 'https:' ? 'https' : 'http',
    timeout: settings.timeoutMs,
    // Retries are safe: each call carries an idempotency key, so a retry is the same request.
    maxNetworkRetries: 2,
    telemetry: false,
  });
  return {
    webhookConfigured: settings.webhookSecret !== undefined,
    async createCustomer({ tenantId, name }) {
      try {
        const customer = await stripe.customers.create(
          { name, metadata: { tenantId } },
          { idempotencyKey: `customer:${tenantId}` },
        );
        return customer.id;
      } catch (err) {
        throw unavailable(err);
      }
    },
    async createPayment(args) {
      try {
        const intent = await stripe.paymentIntents.create(
          {
            amount: args.amountCents,
            currency: args.currency,
            customer: args.customerId,
            description: args.description,
            metadata: args.metadata,
            automatic_payment_methods: { enabled: true },
          },
          { idempotencyKey: args.idempotencyKey },
        );
        return { id: intent.id, clientSecret: intent.client_secret };
      } catch (err) {
        throw unavailable(err);
      }
    },
    verifyWebhook(rawBody, signature) {
      if (!settings.webhookSecret) throw new Error('STRIPE_WEBHOOK_SECRET is not set');
      return stripe.webhooks.constructEvent(
        rawBody,
        signature,
        settings.webhookSecret,
        settings.webhookToleranceSeconds,
      );
    },
  };
}
