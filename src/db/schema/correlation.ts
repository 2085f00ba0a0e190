import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { incidents } from './incidents.js';
import { tenants } from './tenants.js';

/**
 * What an alert is to the service: grouped into an incident, held by a rule until it has fired
 * long or often enough, suppressed by a rule (maintenance), a tool's test or heartbeat, or dropped
 * (held, then recovered before anything opened).
 */
export const alertStates = ['grouped', 'pending', 'suppressed', 'test', 'dropped'] as const;
export type AlertState = (typeof alertStates)[number];
export const correlationReasons = ['fingerprint', 'topology', 'origin', 'rule'] as const;
export type CorrelationReason = (typeof correlationReasons)[number];

/** Why an alert joined its incident. The first alert of an incident joined nothing: `fingerprint`, no related alert. */
export interface Correlation {
  reason: CorrelationReason;
  relatedAlertId?: string;
  hops?: number;
  ruleId?: string;
}

/**
 * One alert (a tool's fingerprint) in one life: its repeats count on it while it stays grouped in
 * an open incident, held, suppressed or a test. `alt_…`. Events keep every delivery.
 */
export const alerts = pgTable(
  'alerts',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    incidentId: text('incident_id').references(() => incidents.id),
    state: text('state', { enum: alertStates }).notNull(),
    provider: text('provider').notNull(),
    fingerprint: text('fingerprint').notNull(),
    name: text('name').notNull(),
    service: text('service'),
    severity: text('severity').notNull(),
    /** What the tool last said: firing or resolved. */
    status: text('status', { enum: ['firing', 'resolved'] }).notNull(),
    title: text('title').notNull(),
    labels: jsonb('labels').$type<Record<string, string>>().notNull().default({}),
    /** The tool's own grouping or the deploy the alert names (`am:<groupKey>`, `deploy:<sha>`…). */
    origins: jsonb('origins').$type<string[]>().notNull().default([]),
    correlation: jsonb('correlation').$type<Correlation>(),
    /** The rule that holds, suppresses or grouped it. */
    ruleId: text('rule_id'),
    firstSeenAt: timestamp('first_seen_at', { withTimezone: true, precision: 3 }).notNull(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true, precision: 3 }).notNull(),
    occurrenceCount: integer('occurrence_count').notNull().default(1),
    /** When it last changed between firing and resolved, newest last (at most 10), for flapping. */
    transitions: jsonb('transitions').$type<string[]>().notNull().default([]),
    flapping: boolean('flapping').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('alerts_incident_idx').on(t.incidentId, t.firstSeenAt, t.id),
    // Without last_seen_at, which every repeat moves: a repeat's update stays HOT (no index
    // writes), as the incident's does (migration 0011).
    index('alerts_tenant_fingerprint_idx').on(t.tenantId, t.fingerprint),
    index('alerts_tenant_state_idx').on(t.tenantId, t.state, t.firstSeenAt, t.id),
    index('alerts_tenant_first_seen_idx').on(t.tenantId, t.firstSeenAt, t.id),
    // The held alerts a rule's `forMinutes` releases, looked for every few seconds.
    index('alerts_pending_idx')
      .on(t.firstSeenAt)
      .where(sql`${t.state} = 'pending'`),
  ],
);
export type AlertRow = typeof alerts.$inferSelect;

export const ruleActions = ['group', 'suppress', 'open_separately'] as const;
export type RuleAction = (typeof ruleActions)[number];

export interface RuleMatch {
  provider?: string;
  service?: string;
  /** Exact, or a glob with `*` and `?`. */
  alertName?: string;
  /** Label name → exact value or glob. */
  labels?: Record<string, string>;
  severity?: string[];
}

/** A tenant's correlation rule (`crl_…`), evaluated in `order` then creation order. */
export const correlationRules = pgTable(
  'correlation_rules',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    order: integer('order').notNull().default(100),
    match: jsonb('match').$type<RuleMatch>().notNull().default({}),
    groupBy: jsonb('group_by').$type<string[]>().notNull().default([]),
    minAlerts: integer('min_alerts').notNull().default(1),
    forMinutes: integer('for_minutes').notNull().default(0),
    action: text('action', { enum: ruleActions }).notNull().default('group'),
    activeFrom: timestamp('active_from', { withTimezone: true, precision: 3 }),
    activeUntil: timestamp('active_until', { withTimezone: true, precision: 3 }),
    lastMatchedAt: timestamp('last_matched_at', { withTimezone: true, precision: 3 }),
    matchCount: integer('match_count').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('correlation_rules_tenant_order_idx').on(t.tenantId, t.order, t.createdAt, t.id),
    uniqueIndex('correlation_rules_tenant_name_idx').on(t.tenantId, t.name),
  ],
);
export type CorrelationRuleRow = typeof correlationRules.$inferSelect;

/** A person's notification preferences: event types switched off, and the lowest severity notified. */
export const notificationPreferences = pgTable(
  'notification_preferences',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    userId: text('user_id').notNull(),
    disabledTypes: jsonb('disabled_types').$type<string[]>().notNull().default([]),
    minSeverity: text('min_severity').notNull().default('low'),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('notification_preferences_user_idx').on(t.tenantId, t.userId)],
);
