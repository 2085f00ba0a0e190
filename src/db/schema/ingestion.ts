import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { incidents } from './incidents.js';
import { tenants } from './tenants.js';

/** Webhook API keys: only a SHA-256 hash and a display prefix of the key are kept. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    keyHash: text('key_hash').notNull().unique(),
    prefix: text('prefix').notNull(),
    /** Needed in clear to verify HMAC signatures; never returned after creation. */
    signingSecret: text('signing_secret').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, precision: 3 }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [index('api_keys_tenant_created_idx').on(t.tenantId, t.createdAt, t.id)],
);

export const ingestedEventKinds = ['alert', 'deployment', 'code_change'] as const;

/**
 * Every event accepted from a monitoring, CI or VCS tool. Alerts attached to an incident wait
 * with `delivered_at` null until the dispatcher has signalled the incident's workflow.
 */
export const ingestedEvents = pgTable(
  'ingested_events',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    provider: text('provider').notNull(),
    kind: text('kind', { enum: ingestedEventKinds }).notNull(),
    status: text('status', { enum: ['firing', 'resolved'] }),
    fingerprint: text('fingerprint'),
    alertName: text('alert_name'),
    service: text('service'),
    /** How the service was read off the alert (`label:deployment`, `datadog:scope`, …); null for changes. */
    attribution: text('attribution'),
    severity: text('severity'),
    title: text('title').notNull(),
    description: text('description').notNull(),
    labels: jsonb('labels').$type<Record<string, string>>().notNull().default({}),
    raw: jsonb('raw').notNull(),
    occurredAt: timestamp('occurred_at', { withTimezone: true, precision: 3 }).notNull(),
    receivedAt: timestamp('received_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    incidentId: text('incident_id').references(() => incidents.id),
    /** The alert record (`alt_…`) this delivery of an alert counts on. */
    alertId: text('alert_id'),
    deliveredAt: timestamp('delivered_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [
    index('ingested_events_tenant_received_idx').on(t.tenantId, t.receivedAt),
    // An incident's own alerts in time order (triage, investigation, pattern symptoms) without
    // scanning the tenant's other events; also serves every lookup by incident alone.
    index('ingested_events_incident_kind_idx').on(t.incidentId, t.kind, t.occurredAt, t.id),
    index('ingested_events_undelivered_idx')
      .on(t.receivedAt)
      .where(sql`${t.deliveredAt} is null`),
    index('ingested_events_tenant_kind_idx').on(t.tenantId, t.kind, t.occurredAt),
  ],
);

export type IngestedEventRow = typeof ingestedEvents.$inferSelect;

/** One row per webhook delivery, so a retried delivery gets the same answer and is stored once. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    provider: text('provider').notNull(),
    deliveryKey: text('delivery_key').notNull(),
    response: jsonb('response').$type<Record<string, unknown>>(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.provider, t.deliveryKey] }),
    // The housekeeping purge walks each kind of key oldest first: a body hash is answered for
    // 10 minutes, a tool's delivery id for 7 days. One partial index per kind,
    // so neither purge reads the rows the other keeps.
    index('webhook_deliveries_body_created_idx')
      .on(t.createdAt)
      .where(sql`${t.deliveryKey} like 'body:%'`),
    index('webhook_deliveries_id_created_idx')
      .on(t.createdAt)
      .where(sql`${t.deliveryKey} like 'id:%'`),
  ],
);
