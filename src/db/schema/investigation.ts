import {
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { incidents, severities } from './incidents.js';
import { tenants } from './tenants.js';

/** A tenant's runbook (`rbk_…`): markdown steps, matched to incidents by service and tags. */
export const runbooks = pgTable(
  'runbooks',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    title: text('title').notNull(),
    service: text('service'),
    tags: jsonb('tags').$type<string[]>().notNull().default([]),
    content: text('content').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('runbooks_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
    index('runbooks_tenant_service_idx').on(t.tenantId, t.service),
  ],
);

/** The latest triage of an incident (re-triage replaces it); the triage evidence object. */
export const triageResults = pgTable(
  'triage_results',
  {
    incidentId: text('incident_id')
      .primaryKey()
      .references(() => incidents.id),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    priority: text('priority', { enum: severities }).notNull(),
    summary: text('summary').notNull(),
    confidence: doublePrecision('confidence').notNull(),
    reasoning: text('reasoning').notNull(),
    suggestedAgents: jsonb('suggested_agents').$type<string[]>().notNull(),
    model: text('model').notNull(),
    tokensUsed: integer('tokens_used').notNull().default(0),
    costUsd: doublePrecision('cost_usd').notNull().default(0),
    /** Increments on every re-triage; guards against a late retry overwriting a newer one. */
    run: integer('run').notNull().default(1),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('triage_results_tenant_idx').on(t.tenantId)],
);

export const investigationStatuses = ['running', 'completed', 'failed'] as const;
export type InvestigationStatus = (typeof investigationStatuses)[number];

/**
 * The investigation of an incident: one row per incident, re-synthesised when context arrives.
 * `hypotheses` keeps every ranked hypothesis, the discarded ones with their reason.
 */
export const investigations = pgTable(
  'investigations',
  {
    incidentId: text('incident_id')
      .primaryKey()
      .references(() => incidents.id),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    status: text('status', { enum: investigationStatuses }).notNull(),
    rootCause: text('root_cause'),
    confidence: doublePrecision('confidence').notNull().default(0),
    recommendedActions: jsonb('recommended_actions').$type<string[]>().notNull().default([]),
    findings: jsonb('findings').$type<Array<{ agentRole: string; content: string }>>().notNull().default([]),
    hypotheses: jsonb('hypotheses').$type<unknown[]>().notNull().default([]),
    failure: text('failure'),
    model: text('model'),
    tokensUsed: integer('tokens_used').notNull().default(0),
    costUsd: doublePrecision('cost_usd').notNull().default(0),
    /** Increments on every (re)start and re-synthesis; writes carry it so stale ones are ignored. */
    run: integer('run').notNull().default(1),
    startedAt: timestamp('started_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    completedAt: timestamp('completed_at', { withTimezone: true, precision: 3 }),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('investigations_tenant_status_idx').on(t.tenantId, t.status)],
);

export type InvestigationRow = typeof investigations.$inferSelect;

export const evidenceTypes = ['log', 'metric', 'deployment', 'code_change', 'alert', 'runbook'] as const;
export type EvidenceType = (typeof evidenceTypes)[number];
export const evidenceSeverities = [...severities, 'info'] as const;

/**
 * Evidence items (`evi_…`) gathered by the specialist agents. `dedupeKey` is unique per
 * incident, so a retried agent activity never stores the same finding twice.
 */
export const evidenceItems = pgTable(
  'evidence_items',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    incidentId: text('incident_id')
      .notNull()
      .references(() => incidents.id),
    agentRole: text('agent_role').notNull(),
    type: text('type', { enum: evidenceTypes }).notNull(),
    source: text('source').notNull(),
    summary: text('summary').notNull(),
    severity: text('severity', { enum: evidenceSeverities }).notNull(),
    occurredAt: timestamp('occurred_at', { withTimezone: true, precision: 3 }).notNull(),
    rawSnippet: text('raw_snippet').notNull(),
    dedupeKey: text('dedupe_key').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('evidence_items_dedupe_idx').on(t.incidentId, t.dedupeKey),
    index('evidence_items_incident_created_idx').on(t.tenantId, t.incidentId, t.createdAt, t.id),
    index('evidence_items_incident_type_idx').on(t.tenantId, t.incidentId, t.type, t.createdAt, t.id),
  ],
);

/** Human context added to an investigation (`POST /v1/investigation/{id}/context`). */
export const investigationContext = pgTable(
  'investigation_context',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    incidentId: text('incident_id')
      .notNull()
      .references(() => incidents.id),
    seq: integer('seq').notNull(),
    content: text('content').notNull(),
    actorId: text('actor_id').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.incidentId, t.seq] })],
);
