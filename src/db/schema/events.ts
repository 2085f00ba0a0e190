import { bigint, bigserial, index, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

/**
 * The outbox of domain events. Written in the same transaction as the projection that caused
 * the event. `seq` is global and assigned at insert (outbox consumers read it, waiting out gaps);
 * `streamSeq` is the event's position in its tenant's stream, assigned at commit under the
 * tenant's commit-head lock (drizzle/0010), so it follows commit order: the SSE `id:` and what
 * `Last-Event-ID` resumes from. `idempotencyKey` makes a retried activity write the event once.
 */
export const events = pgTable(
  'events',
  {
    // Its default takes the transaction id before the seq (drizzle/0017, ADR 0244), which
    // this builder cannot state: the outbox consumers' gap settle relies on that order.
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    id: text('id').notNull().unique(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    type: text('type').notNull(),
    incidentId: text('incident_id'),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    idempotencyKey: text('idempotency_key').notNull().unique(),
    occurredAt: timestamp('occurred_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    /** Null only inside the inserting transaction. */
    streamSeq: bigint('stream_seq', { mode: 'number' }),
  },
  (t) => [
    index('events_tenant_seq_idx').on(t.tenantId, t.seq),
    index('events_incident_idx').on(t.incidentId),
    uniqueIndex('events_tenant_stream_seq_idx').on(t.tenantId, t.streamSeq),
  ],
);

export type EventRow = typeof events.$inferSelect;
