import type { Config } from '../config.js';
import { createStripeProvider, type PaymentProvider } from './provider.js';

/** The api's billing dependency: the payment provider, none when self-hosted (no STRIPE_SECRET_KEY). */
export function billingOf(config: Pick<Config, 'billing'>): { provider: PaymentProvider | undefined } {
  return { provider: config.billing ? createStripeProvider(config.billing) : undefined };
}
