import { findAccount, saveCustomerId, saveProviderPayment, type PaymentRow } from '../db/repositories/billing.js';
import type { PaymentProvider } from './provider.js';
import { usd, type BillingDeps } from './types.js';

/** A payment as the api shows it: the client secret lets the tenant's page confirm it with the provider. */
export interface PaymentView {
  paymentId: string;
  kind: PaymentRow['kind'];
  item: string;
  amountUsd: number;
  currency: string;
  status: PaymentRow['status'];
  providerPaymentId: string | null;
  clientSecret: string | null;
  failureMessage: string | null;
  createdAt: string;
}

export function toPaymentView(row: PaymentRow): PaymentView {
  return {
    paymentId: row.id,
    kind: row.kind,
    item: row.item,
    amountUsd: usd(row.amountCents),
    currency: row.currency,
    status: row.status,
    providerPaymentId: row.providerPaymentId,
    clientSecret: row.status === 'pending' ? row.clientSecret : null,
    failureMessage: row.failureMessage,
    createdAt: row.createdAt.toISOString(),
  };
}

/** The tenant's customer at the provider, made once (the provider's idempotency key makes a race one customer). */
async function customerOf(deps: BillingDeps, provider: PaymentProvider, tenant: { id: string; name: string }) {
  const account = await findAccount(deps.db, tenant.id);
  if (account?.providerCustomerId) return account.providerCustomerId;
  const customerId = await provider.createCustomer({ tenantId: tenant.id, name: tenant.name });
  await saveCustomerId(deps.db, tenant.id, customerId);
  return customerId;
}

/**
 * Makes the provider's payment of a row that has none yet. A retry (the same Idempotency-Key, or
 * a concurrent request) sends the same provider idempotency key, so the provider charges once;
 * the first provider id recorded is the one kept.
 */
export async function ensureProviderPayment(
  deps: BillingDeps,
  provider: PaymentProvider,
  tenant: { id: string; name: string },
  row: PaymentRow,
  description: string,
): Promise<PaymentRow> {
  if (row.providerPaymentId || row.status !== 'pending') return row;
  const customerId = await customerOf(deps, provider, tenant);
  const payment = await provider.createPayment({
    customerId,
    amountCents: row.amountCents,
    currency: row.currency,
    description,
    metadata: { tenantId: tenant.id, paymentId: row.id, kind: row.kind, item: row.item },
    idempotencyKey: `payment:${row.id}`,
  });
  return saveProviderPayment(deps.db, {
    tenantId: tenant.id,
    paymentId: row.id,
    providerPaymentId: payment.id,
    clientSecret: payment.clientSecret,
  });
}
