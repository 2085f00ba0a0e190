import { jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

export interface TenantSettings {
  cloudRoleArn?: string | null;
  cloudExternalId?: string | null;
  cloudRegion?: string | null;
  autoRemediation?: boolean;
  /** Webhooks must carry a valid X-Webhook-Signature. */
  requireWebhookSignature?: boolean;
  /** A resolved notification for the alerts of an automated incident moves it to resolved. */
  autoResolve?: boolean;
  /** Minutes an admin has to answer a remediation approval (1–10080, default 60). */
  approvalTimeoutMinutes?: number;
  /** Http skills may call plain `http://` URLs (default: https only). */
  allowHttpSkills?: boolean;
  /** Enterprise custom quotas, set by an operator (CLI); the documented default when unset. */
  quotas?: { investigationsPerMonth?: number; eventsPerMonth?: number; chatMessagesPerMonth?: number };
  rateLimitPerMinute?: number;
  /** Minutes after an open incident's latest alert in which a related alert joins it (1–1440, default 10). */
  correlationWindowMinutes?: number;
}

export const tenants = pgTable('tenants', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  slug: text('slug').notNull().unique(),
  status: text('status', { enum: ['active', 'suspended'] })
    .notNull()
    .default('active'),
  plan: text('plan', { enum: ['plan_starter', 'plan_pro', 'plan_business', 'plan_enterprise'] }).notNull(),
  settings: jsonb('settings').$type<TenantSettings>().notNull().default({}),
  createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
});

export type TenantRow = typeof tenants.$inferSelect;
