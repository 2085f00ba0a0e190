import type { Config } from '../config.js';
import { createStripeProvider } from './provider.js';

/**
 * The app dependencies billing adds (`billing.provider`, see api/routes/billing.ts), typed as a
 * plain object so the composition spreads them beside the shared ones.
 */
export function billingAppDeps(config: Pick<Config, 'billing'>): object {
  return { billing: { provider: config.billing ? createStripeProvider(config.billing) : undefined } };
}
