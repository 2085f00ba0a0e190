import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const memberRoles = ['admin', 'member'] as const;
export type MemberRole = (typeof memberRoles)[number];
export const signInProviders = ['github', 'google', 'oidc'] as const;
export type SignInProvider = (typeof signInProviders)[number];

/**
 * A person (`usr_…`), across tenants: one per verified email, whichever provider they sign in
 * with. `email` is stored lower-cased.
 */
export const userAccounts = pgTable('user_accounts', {
  id: text('id').primaryKey(),
  email: text('email').notNull().unique(),
  name: text('name'),
  createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
});

/** How a person signed in: the provider's subject (`sub`, GitHub's numeric id) for that provider. */
export const userIdentities = pgTable(
  'user_identities',
  {
    provider: text('provider', { enum: signInProviders }).notNull(),
    subject: text('subject').notNull(),
    userId: text('user_id')
      .notNull()
      .references(() => userAccounts.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    lastSignInAt: timestamp('last_sign_in_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.provider, t.subject] }), index('user_identities_user_idx').on(t.userId)],
);

/** A person's role in a tenant. */
export const memberships = pgTable(
  'memberships',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    userId: text('user_id')
      .notNull()
      .references(() => userAccounts.id, { onDelete: 'cascade' }),
    role: text('role', { enum: memberRoles }).notNull(),
    /** Who added them: a user id, `operator` (the CLI) or `invitation:inv_…`. */
    addedBy: text('added_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.userId] }), index('memberships_user_idx').on(t.userId)],
);

/** An invitation (`inv_…`) of an email to a tenant; accepted at a sign-in with that verified email. */
export const invitations = pgTable(
  'invitations',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    email: text('email').notNull(),
    role: text('role', { enum: memberRoles }).notNull(),
    invitedBy: text('invited_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 3 }).notNull(),
    acceptedAt: timestamp('accepted_at', { withTimezone: true, precision: 3 }),
    acceptedBy: text('accepted_by'),
  },
  (t) => [
    // One open invitation per email and tenant: inviting again renews it.
    uniqueIndex('invitations_open_uq')
      .on(t.tenantId, t.email)
      .where(sql`accepted_at is null`),
    index('invitations_email_idx').on(t.email),
  ],
);

/**
 * A refresh token (`rtk_…`), stored only as its SHA-256. Each use rotates it: the used one is
 * marked `rotatedAt` and a new one joins its `familyId`; a rotated one presented again revokes
 * the whole family (reuse detection).
 */
export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: text('id').primaryKey(),
    familyId: text('family_id').notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    userId: text('user_id')
      .notNull()
      .references(() => userAccounts.id, { onDelete: 'cascade' }),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 3 }).notNull(),
    rotatedAt: timestamp('rotated_at', { withTimezone: true, precision: 3 }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, precision: 3 }),
    /** `logout`, `reuse`, `member_removed`. */
    revokedReason: text('revoked_reason'),
  },
  (t) => [
    index('refresh_tokens_family_idx').on(t.familyId),
    index('refresh_tokens_member_idx').on(t.tenantId, t.userId),
    index('refresh_tokens_expires_idx').on(t.expiresAt),
  ],
);

/**
 * One OAuth authorization in flight (sign-in or an integration's connect): the `state` as its
 * SHA-256, what the callback needs (PKCE verifier, nonce, tenant, return address) and when it was
 * used. Single use: the callback consumes it.
 */
export const oauthStates = pgTable(
  'oauth_states',
  {
    stateHash: text('state_hash').primaryKey(),
    /** `sign_in` or `connect`. */
    purpose: text('purpose', { enum: ['sign_in', 'connect'] }).notNull(),
    provider: text('provider').notNull(),
    tenantId: text('tenant_id'),
    userId: text('user_id'),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 3 }).notNull(),
    consumedAt: timestamp('consumed_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [index('oauth_states_expires_idx').on(t.expiresAt)],
);

export const integrationStatuses = ['pending', 'connected', 'error', 'disconnected'] as const;
export type IntegrationStatus = (typeof integrationStatuses)[number];

/**
 * A tenant's connection (`int_…`) to a catalog provider. `credentials` is sealed with the skill
 * key (AES-256-GCM), never returned.
 */
export const integrations = pgTable(
  'integrations',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    provider: text('provider').notNull(),
    status: text('status', { enum: integrationStatuses }).notNull(),
    /** Why it is in `error`. */
    statusReason: text('status_reason'),
    scopes: jsonb('scopes').$type<string[]>().notNull().default([]),
    credentials: text('credentials'),
    /** When the stored access token expires (oauth2), to refresh it before. */
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 3 }),
    /** The API key made for a `webhook_only` provider. */
    apiKeyId: text('api_key_id'),
    connectedBy: text('connected_by').notNull(),
    connectedAt: timestamp('connected_at', { withTimezone: true, precision: 3 }),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    // One live connection per provider and tenant: connecting again replaces it.
    uniqueIndex('integrations_tenant_provider_uq')
      .on(t.tenantId, t.provider)
      .where(sql`status <> 'disconnected'`),
    index('integrations_expires_idx').on(t.expiresAt),
  ],
);
