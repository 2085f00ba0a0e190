import { appendAudit } from '../db/repositories/audit.js';
import { insertPayment } from '../db/repositories/billing.js';
import { creditPacks, type CreditPackId } from '../domain/plans.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { ensureProviderPayment, toPaymentView, type PaymentView } from './payments.js';
import { notConfigured, type BillingActor, type BillingDeps } from './types.js';

/**
 * Buys a credit pack: one payment per Idempotency-Key (a retry, or a concurrent request with the
 * same key, answers the same payment and the provider is asked with the same key of its own);
 * the credits apply when the provider's webhook confirms the payment.
 */
export async function buyCredits(
  deps: BillingDeps,
  by: BillingActor,
  pack: CreditPackId,
  idempotencyKey: string,
): Promise<{ payment: PaymentView; created: boolean }> {
  const provider = deps.provider;
  if (!provider) throw notConfigured();
  const price = creditPacks[pack];
  const { row, created } = await deps.db.transaction(async (tx) => {
    const inserted = await insertPayment(tx, {
      id: newId('pay'),
      tenantId: by.tenant.id,
      kind: 'credits',
      item: pack,
      amountCents: price.priceUsd * 100,
      currency: 'usd',
      idempotencyKey: `credits:${idempotencyKey}`,
      requestedBy: by.userId,
    });
    if (inserted.created) {
      await appendAudit(tx, {
        tenantId: by.tenant.id,
        actorType: 'user',
        actorId: by.userId,
        action: 'billing.credits_requested',
        targetType: 'payment',
        targetId: inserted.row.id,
        requestId: by.requestId,
        details: { pack, amountUsd: price.priceUsd },
      });
    }
    return inserted;
  });
  if (row.item !== pack) {
    throw new AppError(
      'conflict',
      `This Idempotency-Key was used for another purchase (${row.item}, ${row.id}); use a new key for a new purchase`,
    );
  }
  const payment = await ensureProviderPayment(
    deps,
    provider,
    by.tenant,
    row,
    `${price.units} ${price.metric} credits (${pack})`,
  );
  return { payment: toPaymentView(payment), created };
}
