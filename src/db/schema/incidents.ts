import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const incidentStatuses = [
  'open',
  'triaging',
  'investigating',
  'awaiting_approval',
  'remediating',
  'resolved',
  'closed',
] as const;
export type IncidentStatus = (typeof incidentStatuses)[number];
export const severities = ['critical', 'high', 'medium', 'low'] as const;
export type Severity = (typeof severities)[number];
export const incidentSources = ['automated', 'manual'] as const;
export type IncidentSource = (typeof incidentSources)[number];

/**
 * Query-side projection of an incident. Lifecycle fields are written only by the incident
 * workflow's activities, guarded by `version` so a late or retried write never moves it back.
 */
export const incidents = pgTable(
  'incidents',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    title: text('title').notNull(),
    description: text('description').notNull(),
    severity: text('severity', { enum: severities }).notNull(),
    status: text('status', { enum: incidentStatuses }).notNull(),
    source: text('source', { enum: incidentSources }).notNull(),
    assignedAgents: jsonb('assigned_agents').$type<string[]>().notNull().default([]),
    rootCause: text('root_cause'),
    recommendedActions: jsonb('recommended_actions').$type<string[]>().notNull().default([]),
    version: integer('version').notNull().default(1),
    /** Alert identity of an automated incident; repeats attach while it is not resolved/closed. */
    fingerprint: text('fingerprint'),
    service: text('service'),
    /** The topology node named by the alert's service, its owning team, and whether its
     * criticality (8–10) calls for immediate on-call attention; set at creation. */
    serviceId: text('service_id'),
    ownerTeam: text('owner_team'),
    immediateAttention: boolean('immediate_attention').notNull().default(false),
    occurrenceCount: integer('occurrence_count').notNull().default(1),
    /** The incident this one was merged into (it is then closed). */
    mergedInto: text('merged_into'),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true, precision: 3 }),
    /** When the alerts behind the incident reported resolved; null while any fires. */
    recoveredAt: timestamp('recovered_at', { withTimezone: true, precision: 3 }),
    /** Set once the incident's workflow is known to exist; the reconciler starts the others. */
    workflowStartedAt: timestamp('workflow_started_at', { withTimezone: true, precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('incidents_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
    index('incidents_tenant_status_created_idx').on(t.tenantId, t.status, t.createdAt, t.id),
    index('incidents_tenant_severity_created_idx').on(t.tenantId, t.severity, t.createdAt, t.id),
    index('incidents_open_fingerprint_idx')
      .on(t.tenantId, t.fingerprint)
      .where(sql`${t.fingerprint} is not null and ${t.status} not in ('resolved', 'closed')`),
    index('incidents_unstarted_idx')
      .on(t.createdAt)
      .where(sql`${t.workflowStartedAt} is null`),
  ],
);

export type IncidentRow = typeof incidents.$inferSelect;
