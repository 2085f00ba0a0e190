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
import { incidents } from './incidents.js';
import { tenants } from './tenants.js';

export const patternStatuses = ['emerging', 'stable'] as const;
export type PatternStatus = (typeof patternStatuses)[number];

/**
 * A learned failure signature (`pat_…`). `signatureKey` is the canonical hash of the signature
 * (unique per tenant). Confidence is the Beta posterior mean of confirms and rejects (DESIGN §5).
 * Its full-text column `search` (tsvector, GIN) is defined in SQL only (drizzle/0009), so row
 * reads never carry it.
 */
export const patterns = pgTable(
  'patterns',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    title: text('title').notNull(),
    signatureKey: text('signature_key').notNull(),
    service: text('service'),
    alertNames: jsonb('alert_names').$type<string[]>().notNull().default([]),
    labels: jsonb('labels').$type<Record<string, string>>().notNull().default({}),
    category: text('category').notNull(),
    evidenceTypes: jsonb('evidence_types').$type<string[]>().notNull().default([]),
    rootCause: text('root_cause').notNull(),
    /** The fix that worked (ordered actions), leading the recommendations when it matches again. */
    fix: jsonb('fix').$type<string[]>().notNull().default([]),
    confirms: integer('confirms').notNull().default(0),
    rejects: integer('rejects').notNull().default(0),
    occurrences: integer('occurrences').notNull().default(0),
    confidence: doublePrecision('confidence').notNull().default(0.5),
    status: text('status', { enum: patternStatuses }).notNull().default('emerging'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('patterns_tenant_signature_idx').on(t.tenantId, t.signatureKey),
    index('patterns_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
  ],
);
export type PatternRow = typeof patterns.$inferSelect;

/** Which incidents a pattern was seen in: makes counting an occurrence idempotent. */
export const patternOccurrences = pgTable(
  'pattern_occurrences',
  {
    patternId: text('pattern_id')
      .notNull()
      .references(() => patterns.id),
    incidentId: text('incident_id')
      .notNull()
      .references(() => incidents.id),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.patternId, t.incidentId] }),
    index('pattern_occurrences_incident_idx').on(t.tenantId, t.incidentId),
  ],
);

export const feedbackTypes = ['confirm_rca', 'reject_rca', 'correct_rca'] as const;
export type FeedbackType = (typeof feedbackTypes)[number];

/**
 * Human feedback on a root cause (`fbk_…`): one verdict per incident, user and pattern
 * (`patternKey` is the pattern id or '' for free-form feedback), so repeating it counts once.
 */
export const feedback = pgTable(
  'feedback',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    incidentId: text('incident_id')
      .notNull()
      .references(() => incidents.id),
    patternId: text('pattern_id').references(() => patterns.id),
    patternKey: text('pattern_key').notNull().default(''),
    userId: text('user_id').notNull(),
    type: text('type', { enum: feedbackTypes }).notNull(),
    comment: text('comment'),
    updatedConfidence: doublePrecision('updated_confidence'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('feedback_verdict_idx').on(t.incidentId, t.userId, t.patternKey),
    index('feedback_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
  ],
);

/** Earlier root causes of an incident, kept when a correction replaces it. */
export const rootCauseRevisions = pgTable(
  'root_cause_revisions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    incidentId: text('incident_id')
      .notNull()
      .references(() => incidents.id),
    previousRootCause: text('previous_root_cause'),
    rootCause: text('root_cause').notNull(),
    source: text('source').notNull(),
    actorId: text('actor_id').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('root_cause_revisions_incident_idx').on(t.tenantId, t.incidentId, t.createdAt)],
);

/** An assistant conversation (`sess_…`), owned by one user. */
export const chatSessions = pgTable(
  'chat_sessions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    userId: text('user_id').notNull(),
    incidentId: text('incident_id').references(() => incidents.id),
    title: text('title').notNull(),
    messageCount: integer('message_count').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('chat_sessions_user_idx').on(t.tenantId, t.userId, t.createdAt, t.id)],
);

export const chatRoles = ['user', 'assistant'] as const;
export interface ChatSource {
  type: string;
  id: string;
  title: string;
}

/** One message of a conversation (`msg_…`); assistant messages carry their sources. */
export const chatMessages = pgTable(
  'chat_messages',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    sessionId: text('session_id')
      .notNull()
      .references(() => chatSessions.id),
    role: text('role', { enum: chatRoles }).notNull(),
    content: text('content').notNull(),
    sources: jsonb('sources').$type<ChatSource[]>().notNull().default([]),
    model: text('model'),
    tokensUsed: integer('tokens_used').notNull().default(0),
    costUsd: doublePrecision('cost_usd').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('chat_messages_session_idx').on(t.sessionId, t.createdAt, t.id)],
);
