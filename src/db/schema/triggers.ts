import { bigint, boolean, index, integer, jsonb, pgTable, text, timestamp, unique } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const triggerActions = ['notify', 'start_investigation', 'invoke_skill', 'webhook'] as const;
export type TriggerAction = (typeof triggerActions)[number];

/** Which events of the trigger's type fire it; an absent list matches everything. */
export interface TriggerConditions {
  severities?: string[];
  sources?: string[];
  services?: string[];
}

/**
 * A tenant's rule: when an event of `eventType` matching `conditions` is appended to the outbox,
 * run `action`. `secret` is the HMAC key of webhook triggers (shown once at creation).
 */
export const triggers = pgTable(
  'triggers',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    eventType: text('event_type').notNull(),
    conditions: jsonb('conditions').$type<TriggerConditions>().notNull().default({}),
    action: text('action', { enum: triggerActions }).notNull(),
    actionConfig: jsonb('action_config').$type<Record<string, unknown>>().notNull().default({}),
    secret: text('secret'),
    enabled: boolean('enabled').notNull().default(true),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('triggers_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
    index('triggers_tenant_event_idx').on(t.tenantId, t.eventType),
  ],
);

export const firingStatuses = ['pending', 'running', 'succeeded', 'failed'] as const;

/** One firing of a trigger for one outbox event: inserted in the dispatcher's transaction, run after it. */
export const triggerFirings = pgTable(
  'trigger_firings',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    triggerId: text('trigger_id')
      .notNull()
      .references(() => triggers.id, { onDelete: 'cascade' }),
    eventSeq: bigint('event_seq', { mode: 'number' }).notNull(),
    status: text('status', { enum: firingStatuses }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    error: text('error'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    unique('trigger_firings_trigger_seq_key').on(t.triggerId, t.eventSeq),
    index('trigger_firings_status_idx').on(t.status, t.updatedAt),
  ],
);

export type TriggerRow = typeof triggers.$inferSelect;
export type TriggerFiringRow = typeof triggerFirings.$inferSelect;
