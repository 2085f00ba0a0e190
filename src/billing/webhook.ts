import type Stripe from 'stripe';
import {
  claimWebhookEvent,
  lockAccount,
  lockPayment,
  settlePayment,
  type PaymentRow,
} from '../db/repositories/billing.js';
import { findTenant } from '../db/repositories/tenants.js';
import { tenantPeople } from '../db/repositories/users.js';
import { notifications } from '../db/schema/remediation.js';
import { planRank, usagePeriod, type CreditPackId, type PlanId } from '../domain/plans.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { applyPlan, grantCredits, recordPaymentFailed } from './ledger.js';
import type { ProviderEvent } from './provider.js';
import { notConfigured, usd, type BillingDeps } from './types.js';

/** The payment events billing acts on; any other type is acknowledged and recorded as ignored. */
const SETTLING = new Set(['payment_intent.succeeded', 'payment_intent.payment_failed', 'payment_intent.canceled']);

export interface WebhookOutcome {
  received: true;
  eventId: string;
  /** applied, failed (the payment failed: nothing changed), ignored (not ours, or settled), duplicate. */
  outcome: 'applied' | 'failed' | 'ignored' | 'duplicate';
}

/** Verifies the signature (and its timestamp, the replay window) and returns the event. */
function verified(deps: BillingDeps, rawBody: string, signature: string | undefined): ProviderEvent {
  const provider = deps.provider;
  if (!provider) throw notConfigured();
  if (!provider.webhookConfigured) {
    throw new AppError('billing_not_configured', 'STRIPE_WEBHOOK_SECRET is unset: webhooks cannot be verified');
  }
  if (!signature) throw new AppError('invalid_signature', 'The Stripe-Signature header is missing');
  try {
    return provider.verifyWebhook(rawBody, signature);
  } catch (err) {
    throw new AppError('invalid_signature', `The webhook signature does not hold: ${(err as Error).message}`);
  }
}

/**
 * The provider's webhook: confirms (or fails) a payment, once per event id. Credits and upgrades
 * apply only here; a failed payment changes nothing and tells the tenant's admins.
 */
export async function handleProviderWebhook(
  deps: BillingDeps,
  rawBody: string,
  signature: string | undefined,
): Promise<WebhookOutcome> {
  const event = verified(deps, rawBody, signature);
  const base = { received: true as const, eventId: event.id };
  const intent = SETTLING.has(event.type) ? (event.data.object as Stripe.PaymentIntent) : null;
  const tenantId = intent?.metadata?.tenantId ?? null;
  const paymentId = intent?.metadata?.paymentId ?? null;
  const tenant = tenantId ? await findTenant(deps.db, tenantId) : undefined;

  return deps.db.transaction(async (tx) => {
    const claim = (outcome: string) =>
      claimWebhookEvent(tx, { eventId: event.id, type: event.type, tenantId, paymentId, outcome });
    const payment = intent && tenant && paymentId ? await lockPayment(tx, tenant.id, paymentId) : undefined;
    if (!intent || !payment) {
      return { ...base, outcome: (await claim('ignored: not a payment of this service')) ? 'ignored' : 'duplicate' };
    }
    if (payment.providerPaymentId === null) {
      // The webhook raced the request that made the payment: the provider redelivers.
      throw new AppError('conflict', 'The payment is not recorded yet; deliver again');
    }
    if (
      payment.providerPaymentId !== intent.id ||
      payment.amountCents !== intent.amount ||
      payment.currency !== intent.currency
    ) {
      deps.logger.warn({ eventId: event.id, paymentId }, 'a payment webhook does not match its payment; ignored');
      return { ...base, outcome: (await claim('ignored: does not match the payment')) ? 'ignored' : 'duplicate' };
    }
    const succeeded = event.type === 'payment_intent.succeeded';
    // A declined attempt leaves Stripe's PaymentIntent payable again (requires_payment_method), so
    // a failed row may still be paid; a paid row is final.
    if (payment.status === 'succeeded' || (payment.status === 'failed' && !succeeded)) {
      return { ...base, outcome: (await claim(`ignored: already ${payment.status}`)) ? 'ignored' : 'duplicate' };
    }
    const ctx = { tx, tenantId: tenant!.id, payment };
    if (!succeeded) {
      if (!(await claim('failed'))) return { ...base, outcome: 'duplicate' };
      const reason =
        intent.last_payment_error?.message ??
        (event.type === 'payment_intent.canceled' ? 'canceled' : 'payment failed');
      await recordFailure(ctx, reason);
      return { ...base, outcome: 'failed' };
    }
    // An upgrade paid after the tenant reached its plan or a dearer one (an operator's move) would
    // move it down: the money is kept on record and the plan left alone.
    const stale = payment.kind === 'upgrade' ? await planPassed(ctx) : null;
    const recorded = stale
      ? `ignored: the tenant is already on ${stale}; the payment succeeded and is to be refunded`
      : 'applied';
    if (!(await claim(recorded))) return { ...base, outcome: 'duplicate' };
    await settlePayment(tx, { tenantId: tenant!.id, paymentId: payment.id, status: 'succeeded' });
    if (stale) {
      deps.logger.warn(
        { eventId: event.id, tenantId: tenant!.id, paymentId: payment.id, providerPaymentId: intent.id, plan: stale },
        'an upgrade was paid after the tenant reached that plan or a dearer one; not applied, refund it',
      );
      return { ...base, outcome: 'ignored' };
    }
    await applyPaid(ctx, deps.clock());
    return { ...base, outcome: 'applied' };
  });
}

type Tx = Parameters<Parameters<BillingDeps['db']['transaction']>[0]>[0];
interface Settling {
  tx: Tx;
  tenantId: string;
  payment: PaymentRow;
}

/** The plan the tenant is on when it is already the upgrade's or a dearer one; null when the upgrade still applies. */
async function planPassed({ tx, tenantId, payment }: Settling): Promise<PlanId | null> {
  await lockAccount(tx, tenantId);
  const current = (await findTenant(tx, tenantId))!;
  return planRank(current.plan) >= planRank(payment.item as PlanId) ? current.plan : null;
}

/** A paid payment's credits (for the month it is confirmed in) or plan. */
async function applyPaid({ tx, tenantId, payment }: Settling, now: Date): Promise<void> {
  const actor = { type: 'system' as const, id: 'payment_provider' };
  if (payment.kind === 'credits') {
    await grantCredits(tx, {
      tenantId,
      pack: payment.item as CreditPackId,
      period: usagePeriod(now),
      actor,
      paymentId: payment.id,
      amountUsd: usd(payment.amountCents),
      key: `${payment.id}:credits`,
    });
    return;
  }
  const current = (await findTenant(tx, tenantId))!;
  await applyPlan(tx, {
    tenantId,
    from: current.plan,
    to: payment.item as PlanId,
    actor,
    paymentId: payment.id,
    key: `${payment.id}:plan`,
  });
}

/** A failed payment changes nothing: the row says why, and the tenant's admins are told. */
async function recordFailure({ tx, tenantId, payment }: Settling, reason: string): Promise<void> {
  await settlePayment(tx, { tenantId, paymentId: payment.id, status: 'failed', failureMessage: reason });
  const notice = {
    paymentId: payment.id,
    kind: payment.kind,
    item: payment.item,
    amountUsd: usd(payment.amountCents),
    reason,
  };
  await recordPaymentFailed(tx, { tenantId, ...notice });
  const admins = (await tenantPeople(tx, [tenantId])).filter((p) => p.roles.includes('admin'));
  if (admins.length === 0) return;
  await tx
    .insert(notifications)
    .values(
      admins.map((a) => ({
        id: newId('ntf'),
        tenantId,
        userId: a.userId,
        type: 'billing.payment_failed',
        incidentId: null,
        // Titled here: the notification texts (notifications/describe.ts) cover the stream's 21 types only.
        payload: {
          ...notice,
          title: 'Payment failed',
          body: `The payment of ${notice.amountUsd} USD for ${payment.item} failed (${reason}); nothing changed.`,
        },
        idempotencyKey: `${payment.id}:failed:${a.userId}`,
      })),
    )
    .onConflictDoNothing({ target: notifications.idempotencyKey });
}
