import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const serviceTypes = ['api', 'worker', 'database', 'cache', 'queue'] as const;
export type ServiceType = (typeof serviceTypes)[number];

/**
 * A repository whose changes affect a service: the service's own, or a shared one (GitOps,
 * Helm values, Terraform) limited to the paths that are the service's (`apps/checkout/**`).
 */
export interface ServiceRepository {
  /** `owner/name`, as the tool names it. */
  repository: string;
  /** Globs of the paths that are this service's; absent: the whole repository. */
  paths?: string[];
}

/** A node of the tenant's topology graph (`svc_…`); its name is unique in the tenant. */
export const services = pgTable(
  'services',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    type: text('type', { enum: serviceTypes }).notNull(),
    team: text('team'),
    criticality: integer('criticality').notNull().default(5),
    repositories: jsonb('repositories').$type<ServiceRepository[]>().notNull().default([]),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('services_tenant_name_idx').on(t.tenantId, t.name),
    index('services_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
    check('services_criticality_range', sql`${t.criticality} between 1 and 10`),
  ],
);

/**
 * `source → target`: source depends on target (`edg_…`). A failure of a target affects its
 * sources, so blast radius walks edges backwards (index on target). Deleting a service deletes
 * its edges. Cycles are allowed.
 */
export const serviceEdges = pgTable(
  'service_edges',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    sourceServiceId: text('source_service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    targetServiceId: text('target_service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('service_edges_pair_idx').on(t.tenantId, t.sourceServiceId, t.targetServiceId),
    index('service_edges_target_idx').on(t.tenantId, t.targetServiceId, t.sourceServiceId),
    index('service_edges_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
    check('service_edges_no_self_edge', sql`${t.sourceServiceId} <> ${t.targetServiceId}`),
  ],
);

export type ServiceRow = typeof services.$inferSelect;
export type ServiceEdgeRow = typeof serviceEdges.$inferSelect;

/**
 * A per-tenant counter that moves with every change to the tenant's services or edges (bumped by
 * row triggers in the same transaction, whoever writes), so a cached blast radius can tell
 * whether the graph it was computed on is still the graph.
 */
export const topologyVersions = pgTable('topology_versions', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id),
  version: bigint('version', { mode: 'number' }).notNull().default(0),
});
