import { bigint, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { incidents } from './incidents.js';
import { tenants } from './tenants.js';

export const remediationStatuses = [
  'awaiting_approval',
  'approved',
  'executing',
  'completed',
  'failed',
  'rejected',
  'cancelled',
  'expired',
] as const;
export type RemediationStatus = (typeof remediationStatuses)[number];

/** One step of a remediation plan: a builtin action, an enabled skill, or an integration action. */
export interface RemediationStepPlan {
  index: number;
  kind: 'builtin' | 'skill' | 'integration';
  /** builtin action name, skill name, or integration action. */
  action: string;
  skillId?: string;
  input: Record<string, unknown>;
  /** The recommended action the step comes from, as the investigation wrote it. */
  description: string;
  /**
   * A step-defined check: a skill step for a check action ("Verify checkout answers 200"). The
   * remediation is verified by it when the incident's alerts have not recovered: it must succeed
   * and its output must not say `ok: false` or `healthy: false`.
   */
  check?: boolean;
}

/** A remediation (`rem_…`) proposed from an investigation's recommended actions. */
export const remediations = pgTable(
  'remediations',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    incidentId: text('incident_id')
      .notNull()
      .references(() => incidents.id),
    investigationRun: integer('investigation_run').notNull(),
    status: text('status', { enum: remediationStatuses }).notNull(),
    plan: jsonb('plan').$type<RemediationStepPlan[]>().notNull(),
    /** SHA-256 of the evidence the proposal was built on (evidence-bound approval). */
    evidenceHash: text('evidence_hash').notNull(),
    verification: jsonb('verification').$type<Record<string, unknown>>(),
    failure: text('failure'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    completedAt: timestamp('completed_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [index('remediations_tenant_incident_idx').on(t.tenantId, t.incidentId, t.createdAt)],
);

export const stepStatuses = ['pending', 'running', 'succeeded', 'failed', 'skipped'] as const;

/** Execution record of each step; `idempotencyKey` makes a retried step run its action once. */
export const remediationSteps = pgTable(
  'remediation_steps',
  {
    remediationId: text('remediation_id')
      .notNull()
      .references(() => remediations.id),
    index: integer('index').notNull(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    status: text('status', { enum: stepStatuses }).notNull(),
    idempotencyKey: text('idempotency_key').notNull().unique(),
    attempts: integer('attempts').notNull().default(0),
    output: jsonb('output'),
    error: text('error'),
    startedAt: timestamp('started_at', { withTimezone: true, precision: 3 }),
    finishedAt: timestamp('finished_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [primaryKey({ columns: [t.remediationId, t.index] })],
);

export const approvalStatuses = ['pending', 'approved', 'rejected', 'expired'] as const;
export type ApprovalStatus = (typeof approvalStatuses)[number];

/** An approval request (`apr_…`) for a remediation, with its deadline and decision. */
export const approvals = pgTable(
  'approvals',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    incidentId: text('incident_id')
      .notNull()
      .references(() => incidents.id),
    remediationId: text('remediation_id')
      .notNull()
      .references(() => remediations.id),
    status: text('status', { enum: approvalStatuses }).notNull(),
    deadline: timestamp('deadline', { withTimezone: true, precision: 3 }).notNull(),
    evidenceHash: text('evidence_hash').notNull(),
    /** Why it ended without a decision: `deadline` or `superseded` (stale evidence). */
    expiredReason: text('expired_reason'),
    decidedAt: timestamp('decided_at', { withTimezone: true, precision: 3 }),
    decidedByType: text('decided_by_type'),
    decidedBy: text('decided_by'),
    notes: text('notes'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('approvals_tenant_status_created_idx').on(t.tenantId, t.status, t.createdAt, t.id),
    index('approvals_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
  ],
);

/** The people of a tenant, as their tokens showed them (first and last seen), for notifications. */
export const users = pgTable(
  'users',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    userId: text('user_id').notNull(),
    email: text('email'),
    roles: jsonb('roles').$type<string[]>().notNull(),
    firstSeenAt: timestamp('first_seen_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.userId] })],
);

/** A notification (`ntf_…`) for one user. `idempotencyKey` makes a retried write create it once. */
export const notifications = pgTable(
  'notifications',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    userId: text('user_id').notNull(),
    type: text('type').notNull(),
    incidentId: text('incident_id'),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    idempotencyKey: text('idempotency_key').notNull().unique(),
    readAt: timestamp('read_at', { withTimezone: true, precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('notifications_user_created_idx').on(t.tenantId, t.userId, t.createdAt, t.id),
    // The retention purge walks it oldest first (src/db/repositories/notifications.ts).
    index('notifications_created_idx').on(t.createdAt),
  ],
);

/** Where each durable consumer of the outbox (`events`) has got to, by `seq`. */
export const eventConsumers = pgTable('event_consumers', {
  name: text('name').primaryKey(),
  lastSeq: bigint('last_seq', { mode: 'number' }).notNull().default(0),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
});

/** Short-lived single-use tokens for `EventSource` (`?token=`); only a SHA-256 hash is kept. */
export const streamTokens = pgTable(
  'stream_tokens',
  {
    tokenHash: text('token_hash').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    userId: text('user_id').notNull(),
    roles: jsonb('roles').$type<string[]>().notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 3 }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true, precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('stream_tokens_expires_idx').on(t.expiresAt)],
);
