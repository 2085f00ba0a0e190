import { eq, sql } from 'drizzle-orm';
import { randomBytes } from 'node:crypto';
import type { PlanId } from '../../domain/plans.js';
import { newId } from '../../ids.js';
import type { Db } from '../client.js';
import { tenants, type TenantRow, type TenantSettings } from '../schema/tenants.js';
import { appendAudit } from './audit.js';

export async function findTenant(db: Pick<Db, 'select'>, tenantId: string): Promise<TenantRow | undefined> {
  const rows = await db.select().from(tenants).where(eq(tenants.id, tenantId)).limit(1);
  return rows[0];
}

export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48);
  return slug || 'tenant';
}

/** Creates a tenant with a unique slug (a short suffix is added when the name's slug is taken). */
export async function createTenant(
  db: Db,
  args: { name: string; plan: PlanId; settings?: TenantSettings; actor?: { type: 'user' | 'system'; id: string } },
): Promise<TenantRow> {
  const base = slugify(args.name);
  for (let attempt = 0; attempt < 5; attempt++) {
    const slug = attempt === 0 ? base : `${base}-${randomBytes(3).toString('hex')}`;
    const created = await db.transaction(async (tx) => {
      const rows = await tx
        .insert(tenants)
        .values({ id: newId('ten'), name: args.name, slug, plan: args.plan, settings: args.settings ?? {} })
        .onConflictDoNothing({ target: tenants.slug })
        .returning();
      const row = rows[0];
      if (row) {
        await appendAudit(tx, {
          tenantId: row.id,
          actorType: args.actor?.type ?? 'system',
          actorId: args.actor?.id ?? 'cli',
          action: 'tenant.created',
          targetType: 'tenant',
          targetId: row.id,
          details: { name: row.name, plan: row.plan, ...(row.settings.quotas ? { quotas: row.settings.quotas } : {}) },
        });
      }
      return row;
    });
    if (created) return created;
  }
  throw new Error(`could not find a free slug for ${args.name}`);
}

/** Updates name and merges settings (only the given keys change). */
export async function updateTenant(
  db: Pick<Db, 'update'>,
  tenantId: string,
  patch: { name?: string; settings?: Partial<TenantSettings> },
): Promise<TenantRow | undefined> {
  const rows = await db
    .update(tenants)
    .set({
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.settings ? { settings: sql`${tenants.settings} || ${JSON.stringify(patch.settings)}::jsonb` } : {}),
      updatedAt: sql`now()`,
    })
    .where(eq(tenants.id, tenantId))
    .returning();
  return rows[0];
}

/**
 * Sets some of an enterprise tenant's custom monthly quotas (the others keep theirs) and audits
 * it, in one transaction. Undefined when there is no such tenant; the caller checks the plan.
 */
export async function setCustomQuotas(
  db: Db,
  tenantId: string,
  quotas: NonNullable<TenantSettings['quotas']>,
  actor: { type: 'user' | 'system'; id: string } = { type: 'system', id: 'cli' },
): Promise<TenantRow | undefined> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .update(tenants)
      .set({
        settings: sql`jsonb_set(${tenants.settings}, '{quotas}', coalesce(${tenants.settings}->'quotas', '{}'::jsonb) || ${JSON.stringify(quotas)}::jsonb)`,
        updatedAt: sql`now()`,
      })
      .where(eq(tenants.id, tenantId))
      .returning();
    const row = rows[0];
    if (row) {
      await appendAudit(tx, {
        tenantId,
        actorType: actor.type,
        actorId: actor.id,
        action: 'tenant.quotas_updated',
        targetType: 'tenant',
        targetId: tenantId,
        details: quotas,
      });
    }
    return row;
  });
}
