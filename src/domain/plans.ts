import type { TenantRow } from '../db/schema/tenants.js';

export const planIds = ['plan_starter', 'plan_pro', 'plan_business', 'plan_enterprise'] as const;
export type PlanId = (typeof planIds)[number];

export interface Plan {
  planId: PlanId;
  name: string;
  priceMonthlyUsd: number | null;
  features: {
    investigationsPerMonth: number | 'custom';
    eventsPerMonth: number | 'custom';
    apiRateLimitPerMinute: number;
    customSkills: boolean;
    relayAccess: boolean;
  };
}

/** Plans and their published features, exactly as the interface lists them. */
export const plans: readonly Plan[] = [
  {
    planId: 'plan_starter',
    name: 'Starter',
    priceMonthlyUsd: 99,
    features: {
      investigationsPerMonth: 15,
      eventsPerMonth: 500,
      apiRateLimitPerMinute: 100,
      customSkills: false,
      relayAccess: false,
    },
  },
  {
    planId: 'plan_pro',
    name: 'Pro',
    priceMonthlyUsd: 349,
    features: {
      investigationsPerMonth: 60,
      eventsPerMonth: 3000,
      apiRateLimitPerMinute: 500,
      customSkills: true,
      relayAccess: true,
    },
  },
  {
    planId: 'plan_business',
    name: 'Business',
    priceMonthlyUsd: 899,
    features: {
      investigationsPerMonth: 200,
      eventsPerMonth: 10000,
      apiRateLimitPerMinute: 2000,
      customSkills: true,
      relayAccess: true,
    },
  },
  {
    planId: 'plan_enterprise',
    name: 'Enterprise',
    priceMonthlyUsd: null,
    features: {
      investigationsPerMonth: 'custom',
      eventsPerMonth: 'custom',
      apiRateLimitPerMinute: 2000,
      customSkills: true,
      relayAccess: true,
    },
  },
];

/** Quotas not in the interface (DESIGN §5). */
const chatMessagesPerMonth: Record<PlanId, number | 'custom'> = {
  plan_starter: 200,
  plan_pro: 1000,
  plan_business: 5000,
  plan_enterprise: 'custom',
};
/** Days of audit log each plan keeps; older entries are purged. */
export const auditRetentionDays: Readonly<Record<PlanId, number>> = {
  plan_starter: 30,
  plan_pro: 90,
  plan_business: 365,
  plan_enterprise: 730,
};

export function getPlan(planId: PlanId): Plan {
  const plan = plans.find((p) => p.planId === planId);
  if (!plan) throw new Error(`unknown plan ${planId}`);
  return plan;
}

export type QuotaMetric = 'events' | 'investigations' | 'chat_messages';

/** The monthly quotas an enterprise tenant may have set (`settings.quotas`), by setting name. */
export type CustomQuotas = { investigationsPerMonth: number; eventsPerMonth: number; chatMessagesPerMonth: number };
export const customQuotaKeys: Readonly<Record<QuotaMetric, keyof CustomQuotas>> = {
  investigations: 'investigationsPerMonth',
  events: 'eventsPerMonth',
  chat_messages: 'chatMessagesPerMonth',
};
/** The bound an operator may set a custom quota to (the counters are 32-bit integers). */
export const MAX_CUSTOM_QUOTA = 1_000_000_000;

/**
 * An enterprise tenant's quotas where its operator set none: so every
 * remaining count is an integer, and enforcement uses the same numbers.
 */
export const enterpriseQuotaDefaults: Readonly<CustomQuotas> = {
  investigationsPerMonth: 2000,
  eventsPerMonth: 1_000_000,
  chatMessagesPerMonth: 20_000,
};

/** The monthly limit of a metric for a tenant: its plan's, or for enterprise its custom one or the default. */
export function monthlyQuota(tenant: Pick<TenantRow, 'plan' | 'settings'>, metric: QuotaMetric): number {
  const plan = getPlan(tenant.plan);
  const published =
    metric === 'events'
      ? plan.features.eventsPerMonth
      : metric === 'investigations'
        ? plan.features.investigationsPerMonth
        : chatMessagesPerMonth[tenant.plan];
  if (published !== 'custom') return published;
  const key = customQuotaKeys[metric];
  return tenant.settings.quotas?.[key] ?? enterpriseQuotaDefaults[key];
}

/** Every monthly quota of a tenant, by setting name. */
export function monthlyQuotas(tenant: Pick<TenantRow, 'plan' | 'settings'>): CustomQuotas {
  return {
    investigationsPerMonth: monthlyQuota(tenant, 'investigations'),
    eventsPerMonth: monthlyQuota(tenant, 'events'),
    chatMessagesPerMonth: monthlyQuota(tenant, 'chat_messages'),
  };
}

export function rateLimitPerMinute(tenant: Pick<TenantRow, 'plan' | 'settings'>): number {
  const planLimit = getPlan(tenant.plan).features.apiRateLimitPerMinute;
  return tenant.plan === 'plan_enterprise' && tenant.settings.rateLimitPerMinute
    ? tenant.settings.rateLimitPerMinute
    : planLimit;
}

export function retentionDays(planId: PlanId): number {
  return auditRetentionDays[planId];
}

/** The usage period (calendar month, UTC) a moment falls in. */
export function usagePeriod(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** Shares of a monthly quota at which `system.quota_warning` is emitted, once each per month. */
const QUOTA_WARNING_PERCENTS = [80, 100] as const;

/** The warning percents a count crossed going from `before` to `after` under `limit`. */
export function quotaWarningsCrossed(before: number, after: number, limit: number): number[] {
  return QUOTA_WARNING_PERCENTS.filter((percent) => {
    const mark = Math.ceil((limit * percent) / 100);
    return after >= mark && before < mark;
  });
}

/** The idempotency key of a quota warning: one per tenant, month, metric and percent. */
export const quotaWarningKey = (tenantId: string, period: string, metric: QuotaMetric, percent: number) =>
  `${tenantId}:${period}:${metric}:quota:${percent}`;

/** Credit packs: extra units of one metric for the current usage period, at a fixed price. */
export const creditPackIds = ['investigations_10', 'investigations_50', 'events_1000', 'events_10000'] as const;
export type CreditPackId = (typeof creditPackIds)[number];
export type CreditMetric = 'investigations' | 'events';
export interface CreditPack {
  pack: CreditPackId;
  metric: CreditMetric;
  units: number;
  priceUsd: number;
}
/** Below the per-unit price of the plans they top up, so buying a pack never beats upgrading by much. */
export const creditPacks: Readonly<Record<CreditPackId, CreditPack>> = {
  investigations_10: { pack: 'investigations_10', metric: 'investigations', units: 10, priceUsd: 49 },
  investigations_50: { pack: 'investigations_50', metric: 'investigations', units: 50, priceUsd: 199 },
  events_1000: { pack: 'events_1000', metric: 'events', units: 1000, priceUsd: 29 },
  events_10000: { pack: 'events_10000', metric: 'events', units: 10000, priceUsd: 199 },
};

/** The subscription period a moment falls in: the usage period's calendar month, UTC. */
export function subscriptionPeriod(at: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  const end = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
  return { start, end };
}

/** The ordering of self-service plans by price; enterprise is by arrangement and has none. */
export function planRank(planId: PlanId): number {
  return getPlan(planId).priceMonthlyUsd ?? Number.POSITIVE_INFINITY;
}

/**
 * The charge, in cents, of moving from one plan to a dearer one at `at`: the price difference for
 * the share of the period left, rounded to the cent.
 */
export function proratedUpgradeCents(from: PlanId, to: PlanId, at: Date): number {
  const { start, end } = subscriptionPeriod(at);
  const left = (end.getTime() - at.getTime()) / (end.getTime() - start.getTime());
  const difference = (getPlan(to).priceMonthlyUsd ?? 0) - (getPlan(from).priceMonthlyUsd ?? 0);
  return Math.max(0, Math.round(difference * 100 * left));
}
