import { sql } from 'drizzle-orm';
import { bigint, bigserial, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const widgetEventTypes = ['message.complete', 'session.expiry_warning', 'session.closed'] as const;
export type WidgetEventType = (typeof widgetEventTypes)[number];
/** The events a push subscription may ask for (the interface's list; `session.closed` is stream-only). */
export const widgetPushEventTypes = ['message.complete', 'session.expiry_warning'] as const;
export type WidgetPushEventType = (typeof widgetPushEventTypes)[number];

/** The tenant's widget session timing (ADR 0285); no row means the documented defaults. */
export const widgetSettings = pgTable('widget_settings', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id),
  inactivitySeconds: integer('inactivity_seconds').notNull(),
  expiryWarningSeconds: integer('expiry_warning_seconds').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
});

/**
 * A publishable widget key (`wkey_…`): opens widget sessions from the listed browser origins.
 * Only the SHA-256 of the secret is stored; the secret is shown once at creation.
 */
export const widgetKeys = pgTable(
  'widget_keys',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    keyHash: text('key_hash').notNull().unique(),
    keyPrefix: text('key_prefix').notNull(),
    allowedOrigins: jsonb('allowed_origins').$type<string[]>().notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [index('widget_keys_tenant_created_idx').on(t.tenantId, t.createdAt, t.id)],
);

export const widgetSessionStatuses = ['open', 'closed', 'expired'] as const;

/**
 * A widget session (`wsess_…`), driven by its Temporal workflow of the same id. The bearer token
 * is stored as its SHA-256 only; the session's timing is copied from the settings at opening.
 */
export const widgetSessions = pgTable(
  'widget_sessions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    tokenHash: text('token_hash').notNull().unique(),
    keyId: text('key_id').references(() => widgetKeys.id),
    userId: text('user_id'),
    origin: text('origin'),
    chatSessionId: text('chat_session_id'),
    status: text('status', { enum: widgetSessionStatuses }).notNull().default('open'),
    inactivitySeconds: integer('inactivity_seconds').notNull(),
    expiryWarningSeconds: integer('expiry_warning_seconds').notNull(),
    lastActivityAt: timestamp('last_activity_at', { withTimezone: true, precision: 3 }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 3 }).notNull(),
    closedAt: timestamp('closed_at', { withTimezone: true, precision: 3 }),
    closeReason: text('close_reason'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('widget_sessions_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
    // Housekeeping finds sessions long past their deadline by it (widget-retention.ts).
    index('widget_sessions_expires_idx').on(t.expiresAt),
    // A publishable key's open sessions are counted at each opening (its bound, ADR 0293).
    index('widget_sessions_key_open_idx')
      .on(t.keyId, t.expiresAt)
      .where(sql`${t.status} = 'open'`),
  ],
);

/** The session's event log: the SSE stream reads it (`id` is the `Last-Event-ID`), pushes fan out from it. */
export const widgetSessionEvents = pgTable(
  'widget_session_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    sessionId: text('session_id')
      .notNull()
      .references(() => widgetSessions.id),
    type: text('type', { enum: widgetEventTypes }).notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('widget_session_events_session_idx').on(t.sessionId, t.id)],
);

export const widgetSubscriptionStatuses = ['active', 'disabled'] as const;

/** A push subscription (`wsub_…`) of one session; the signing secret is stored encrypted. */
export const widgetPushSubscriptions = pgTable(
  'widget_push_subscriptions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    sessionId: text('session_id')
      .notNull()
      .references(() => widgetSessions.id),
    url: text('url').notNull(),
    events: jsonb('events').$type<WidgetPushEventType[]>().notNull(),
    secretCiphertext: text('secret_ciphertext'),
    status: text('status', { enum: widgetSubscriptionStatuses }).notNull().default('active'),
    disabledReason: text('disabled_reason'),
    disabledAt: timestamp('disabled_at', { withTimezone: true, precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('widget_push_subscriptions_session_idx').on(t.tenantId, t.sessionId, t.createdAt)],
);

export const widgetDeliveryStatuses = ['pending', 'delivered', 'failed'] as const;

/** One push of one event to one subscription (`wdel_…`, sent as the delivery id header). */
export const widgetPushDeliveries = pgTable(
  'widget_push_deliveries',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    subscriptionId: text('subscription_id')
      .notNull()
      .references(() => widgetPushSubscriptions.id),
    eventId: bigint('event_id', { mode: 'number' }).notNull(),
    eventType: text('event_type', { enum: widgetPushEventTypes }).notNull(),
    status: text('status', { enum: widgetDeliveryStatuses }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    deliveredAt: timestamp('delivered_at', { withTimezone: true, precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('widget_push_deliveries_sub_event_idx').on(t.subscriptionId, t.eventId)],
);
