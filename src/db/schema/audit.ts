import { index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const actorTypes = ['user', 'api_key', 'system'] as const;
export type ActorType = (typeof actorTypes)[number];

/** One row per mutation (api or workflow). Never holds secrets. */
export const auditLog = pgTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id),
    occurredAt: timestamp('occurred_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    actorType: text('actor_type', { enum: actorTypes }).notNull(),
    actorId: text('actor_id').notNull(),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id').notNull(),
    incidentId: text('incident_id'),
    requestId: text('request_id'),
    workflowId: text('workflow_id'),
    details: jsonb('details').$type<Record<string, unknown>>().notNull().default({}),
    /** Set for writes that may be retried (activities), so a retry records once. */
    idempotencyKey: text('idempotency_key').unique(),
  },
  (t) => [index('audit_tenant_time_idx').on(t.tenantId, t.occurredAt, t.id)],
);
