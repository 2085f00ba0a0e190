import { bigserial, index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

/**
 * The outbox of domain events. Written in the same transaction as the projection that caused
 * the event; `seq` is the monotonic id the SSE stream resumes from. `idempotencyKey` makes a
 * retried activity write the event once.
 */
export const events = pgTable(
  'events',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    id: text('id').notNull().unique(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id),
    type: text('type').notNull(),
    incidentId: text('incident_id'),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    idempotencyKey: text('idempotency_key').notNull().unique(),
    occurredAt: timestamp('occurred_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('events_tenant_seq_idx').on(t.tenantId, t.seq), index('events_incident_idx').on(t.incidentId)],
);

export type EventRow = typeof events.$inferSelect;
