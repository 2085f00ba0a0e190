import { boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const skillTypes = ['http', 'integration', 'builtin'] as const;
export type SkillType = (typeof skillTypes)[number];

/**
 * A tenant's custom skill (`skl_…`). `config` is stored as validated for its type, except that
 * `http` header values are stored encrypted (AES-256-GCM, key from config) and are never
 * returned by the api. Builtin skills ship with the service and are not rows.
 */
export const skills = pgTable(
  'skills',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    description: text('description').notNull(),
    type: text('type', { enum: skillTypes }).notNull(),
    config: jsonb('config').$type<Record<string, unknown>>().notNull(),
    inputSchema: jsonb('input_schema').$type<Record<string, unknown>>(),
    enabled: boolean('enabled').notNull().default(true),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('skills_tenant_name_idx').on(t.tenantId, t.name),
    index('skills_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
  ],
);

/**
 * One row per skill invocation (`ski_…`): what agents, remediations and the test endpoint ran,
 * with its outcome. `idempotencyKey` (e.g. workflow id + step) makes a retried activity return
 * the recorded outcome instead of calling the skill twice. Purged after
 * SKILL_INVOCATION_RETENTION_MS, when no retry can need it.
 */
export const skillInvocations = pgTable(
  'skill_invocations',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    skillId: text('skill_id').notNull(),
    skillName: text('skill_name').notNull(),
    idempotencyKey: text('idempotency_key').unique(),
    status: text('status', { enum: ['succeeded', 'failed'] }).notNull(),
    input: jsonb('input').notNull(),
    output: jsonb('output'),
    error: jsonb('error').$type<{ code: string; message: string }>(),
    durationMs: integer('duration_ms').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('skill_invocations_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
    // The retention purge walks it oldest first (src/db/repositories/skill-invocations.ts).
    index('skill_invocations_created_idx').on(t.createdAt),
  ],
);

export type SkillRow = typeof skills.$inferSelect;
