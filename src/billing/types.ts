import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import type { Db } from '../db/client.js';
import type { TenantRow } from '../db/schema/tenants.js';
import type { PaymentProvider } from './provider.js';

/** What billing needs: the database, the clock, and the payment provider when one is configured. */
export interface BillingDeps {
  db: Db;
  clock: () => Date;
  logger: Logger;
  /** Absent when self-hosted (no STRIPE_SECRET_KEY): plan changes and credits go through the CLI. */
  provider: PaymentProvider | undefined;
}

/** Who asked (an admin through the api). */
export interface BillingActor {
  tenant: TenantRow;
  userId: string;
  requestId: string | null;
}

export const notConfigured = () =>
  new AppError(
    'billing_not_configured',
    'No payment provider is configured (STRIPE_SECRET_KEY is unset): on a self-hosted service an operator applies plan changes and credits with the CLI (tenant plan, tenant credits)',
  );

export const usd = (cents: number) => Math.round(cents) / 100;
