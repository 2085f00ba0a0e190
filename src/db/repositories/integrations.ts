import { and, asc, eq, ne, sql } from 'drizzle-orm';
import { newId } from '../../ids.js';
import type { Db } from '../client.js';
import { integrations, type IntegrationStatus } from '../schema/identity.js';

export type IntegrationRow = typeof integrations.$inferSelect;
type Tx = Pick<Db, 'select' | 'insert' | 'update' | 'execute'>;

/** What the api shows of a connection: never its credentials. */
export function toIntegrationView(row: IntegrationRow) {
  return {
    integrationId: row.id,
    provider: row.provider,
    status: row.status,
    statusReason: row.statusReason,
    scopes: row.scopes,
    connectedAt: row.connectedAt?.toISOString() ?? null,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    connectedBy: row.connectedBy,
  };
}

/** The tenant's connections that are not disconnected, by provider. */
export async function listIntegrations(db: Pick<Db, 'select'>, tenantId: string): Promise<IntegrationRow[]> {
  return db
    .select()
    .from(integrations)
    .where(and(eq(integrations.tenantId, tenantId), ne(integrations.status, 'disconnected')))
    .orderBy(asc(integrations.provider), asc(integrations.id));
}

export async function findIntegration(
  db: Pick<Db, 'select'>,
  tenantId: string,
  integrationId: string,
  options: { forUpdate?: boolean } = {},
): Promise<IntegrationRow | undefined> {
  const query = db
    .select()
    .from(integrations)
    .where(and(eq(integrations.tenantId, tenantId), eq(integrations.id, integrationId)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

/** The tenant's live (not disconnected) connection to `provider`, if any. */
export async function findLiveIntegration(
  db: Pick<Db, 'select'>,
  tenantId: string,
  provider: string,
  options: { forUpdate?: boolean } = {},
): Promise<IntegrationRow | undefined> {
  const query = db
    .select()
    .from(integrations)
    .where(
      and(
        eq(integrations.tenantId, tenantId),
        eq(integrations.provider, provider),
        ne(integrations.status, 'disconnected'),
      ),
    );
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

/**
 * Serialises writes of a tenant's connection to a provider until the transaction ends (taken
 * before the row's lock, always in that order).
 */
export async function lockProviderConnection(tx: Pick<Db, 'execute'>, tenantId: string, provider: string) {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`integrations:${tenantId}:${provider}`}))`);
}

export interface ConnectionWrite {
  tenantId: string;
  provider: string;
  status: IntegrationStatus;
  statusReason: string | null;
  scopes: string[];
  expiresAt: Date | null;
  apiKeyId: string | null;
  connectedBy: string;
  now: Date;
  /** The sealed credentials for the row's id (sealing binds the id), or null. */
  seal: (integrationId: string) => string | null;
}

/**
 * Writes the tenant's connection to a provider: the live row updated in place (connecting again
 * replaces credentials, keeps the id), or a new `int_…`. Serialised per tenant and provider, so
 * two callbacks at once do not both insert. Returns the row and the one it replaced, if any.
 */
export async function saveConnection(
  tx: Tx,
  write: ConnectionWrite,
): Promise<{ row: IntegrationRow; previous: IntegrationRow | undefined }> {
  await lockProviderConnection(tx, write.tenantId, write.provider);
  const previous = await findLiveIntegration(tx, write.tenantId, write.provider, { forUpdate: true });
  const id = previous?.id ?? newId('int');
  const values = {
    status: write.status,
    statusReason: write.statusReason,
    scopes: write.scopes,
    credentials: write.seal(id),
    expiresAt: write.expiresAt,
    apiKeyId: write.apiKeyId,
    connectedBy: write.connectedBy,
    connectedAt: write.status === 'connected' ? write.now : null,
    updatedAt: write.now,
  };
  if (previous) {
    const [row] = await tx.update(integrations).set(values).where(eq(integrations.id, id)).returning();
    return { row: row!, previous };
  }
  const [row] = await tx
    .insert(integrations)
    .values({ id, tenantId: write.tenantId, provider: write.provider, createdAt: write.now, ...values })
    .returning();
  return { row: row!, previous: undefined };
}

/** Sets status fields (and credentials when given) of one connection of the tenant. */
export async function updateIntegration(
  tx: Pick<Db, 'update'>,
  tenantId: string,
  integrationId: string,
  patch: Partial<
    Pick<IntegrationRow, 'status' | 'statusReason' | 'credentials' | 'expiresAt' | 'scopes' | 'apiKeyId' | 'lastUsedAt'>
  > & { updatedAt: Date },
): Promise<void> {
  await tx
    .update(integrations)
    .set(patch)
    .where(and(eq(integrations.tenantId, tenantId), eq(integrations.id, integrationId)));
}
