import { integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const usageMetrics = ['events', 'investigations', 'chat_messages'] as const;
export type UsageMetric = (typeof usageMetrics)[number];

/**
 * Monthly usage per tenant and metric; period is `YYYY-MM` in UTC. `credits`: units bought for the
 * period on top of the plan's quota (docs/billing.md), used once the quota is.
 */
export const usageCounters = pgTable(
  'usage_counters',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    period: text('period').notNull(),
    metric: text('metric', { enum: usageMetrics }).notNull(),
    count: integer('count').notNull().default(0),
    credits: integer('credits').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.period, t.metric] })],
);

/** Fixed one-minute rate-limit windows, shared by every api process. */
export const rateLimitWindows = pgTable(
  'rate_limit_windows',
  {
    bucket: text('bucket').notNull(),
    windowStart: timestamp('window_start', { withTimezone: true, precision: 0 }).notNull(),
    count: integer('count').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.bucket, t.windowStart] })],
);
