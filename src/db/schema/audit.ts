import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const actorTypes = ['user', 'api_key', 'system'] as const;
export type ActorType = (typeof actorTypes)[number];

/**
 * One row per mutation (api or workflow). Never holds secrets. Rows are hash-chained per tenant
 * by a deferred trigger at commit (see drizzle/0009): `seq` is the position in the tenant's
 * chain, `prevHash` the previous entry's `hash`, and `hash` = SHA-256(prevHash, canonical
 * content). They are null only inside the inserting transaction.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    occurredAt: timestamp('occurred_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    actorType: text('actor_type', { enum: actorTypes }).notNull(),
    actorId: text('actor_id').notNull(),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id').notNull(),
    incidentId: text('incident_id'),
    requestId: text('request_id'),
    workflowId: text('workflow_id'),
    /** For workflow-driven entries: the workflow task (history event id) that decided it. */
    historyEventId: integer('history_event_id'),
    details: jsonb('details').$type<Record<string, unknown>>().notNull().default({}),
    /** Set for writes that may be retried (activities), so a retry records once. */
    idempotencyKey: text('idempotency_key').unique(),
    seq: bigint('seq', { mode: 'number' }),
    prevHash: text('prev_hash'),
    hash: text('hash'),
  },
  (t) => [
    index('audit_tenant_time_idx').on(t.tenantId, t.occurredAt, t.id),
    uniqueIndex('audit_tenant_seq_idx').on(t.tenantId, t.seq),
    index('audit_tenant_incident_idx')
      .on(t.tenantId, t.incidentId, t.occurredAt, t.id)
      .where(sql`${t.incidentId} is not null`),
  ],
);

/**
 * The tenant's commit head: the end of its audit chain and of its event stream. Its row lock,
 * taken at commit by the sealing triggers, serialises per tenant the commits that write audit
 * entries or events, so both are numbered in commit order.
 */
export const auditChainHeads = pgTable('audit_chain_heads', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id),
  lastSeq: bigint('last_seq', { mode: 'number' }).notNull().default(0),
  lastHash: text('last_hash').notNull(),
  lastStreamSeq: bigint('last_stream_seq', { mode: 'number' }).notNull().default(0),
  /**
   * Retention: the entries up to this position were purged; the next entry links
   * to `purgedHash`, the last purged entry's hash. Only entries up to here may be deleted.
   */
  purgedSeq: bigint('purged_seq', { mode: 'number' }).notNull().default(0),
  purgedHash: text('purged_hash'),
});

export const exportStatuses = ['queued', 'running', 'completed', 'failed'] as const;
export type ExportStatus = (typeof exportStatuses)[number];
export const exportFormats = ['ndjson', 'csv'] as const;
export type ExportFormat = (typeof exportFormats)[number];

export interface ExportFilters {
  actorType?: ActorType;
  action?: string;
  incidentId?: string;
}
export interface ExportDestination {
  type: 's3';
  bucket: string;
  prefix: string;
}

/** An audit export job (`exp_…`); its workflow (workflow id = id) moves it along. */
export const auditExports = pgTable(
  'audit_exports',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    status: text('status', { enum: exportStatuses }).notNull().default('queued'),
    format: text('format', { enum: exportFormats }).notNull(),
    rangeFrom: timestamp('range_from', { withTimezone: true, precision: 3 }).notNull(),
    rangeTo: timestamp('range_to', { withTimezone: true, precision: 3 }).notNull(),
    filters: jsonb('filters').$type<ExportFilters>().notNull().default({}),
    destination: jsonb('destination').$type<ExportDestination>(),
    estimatedRows: integer('estimated_rows').notNull().default(0),
    rowCount: integer('row_count'),
    bytes: bigint('bytes', { mode: 'number' }),
    /** Where the finished file is: a path under the export directory, or the object key. */
    location: text('location'),
    failure: text('failure'),
    requestedBy: text('requested_by').notNull(),
    submittedAt: timestamp('submitted_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true, precision: 3 }),
    completedAt: timestamp('completed_at', { withTimezone: true, precision: 3 }),
    /** Set once the export's workflow is known to exist; the reconciler starts the others. */
    workflowStartedAt: timestamp('workflow_started_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [
    index('audit_exports_tenant_submitted_idx').on(t.tenantId, t.submittedAt, t.id),
    index('audit_exports_unstarted_idx')
      .on(t.submittedAt)
      .where(sql`${t.workflowStartedAt} is null`),
  ],
);
export type AuditExportRow = typeof auditExports.$inferSelect;
