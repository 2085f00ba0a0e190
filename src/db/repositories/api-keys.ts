import { and, count, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type postgres from 'postgres';
import type { Db } from '../client.js';
import { apiKeys } from '../schema/ingestion.js';
import type { TenantRow, TenantSettings } from '../schema/tenants.js';

export const MAX_ACTIVE_KEYS_PER_TENANT = 100;

export function toApiKeyView(row: typeof apiKeys.$inferSelect) {
  return {
    keyId: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
  };
}

export async function countActiveKeys(db: Pick<Db, 'select'>, tenantId: string): Promise<number> {
  const rows = await db
    .select({ n: count() })
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, tenantId), isNull(apiKeys.revokedAt)));
  return rows[0]?.n ?? 0;
}

/** Newest first, keyset over (created_at, id). */
export async function listApiKeys(db: Db, tenantId: string, limit: number, after?: { createdAt: Date; id: string }) {
  const rows = await db
    .select()
    .from(apiKeys)
    .where(
      and(
        eq(apiKeys.tenantId, tenantId),
        after
          ? or(lt(apiKeys.createdAt, after.createdAt), and(eq(apiKeys.createdAt, after.createdAt), lt(apiKeys.id, after.id)))
          : undefined,
      ),
    )
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
    .limit(limit + 1);
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

export interface WebhookCredential {
  keyId: string;
  signingSecret: string;
  tenantStatus: string;
  plan: TenantRow['plan'];
  settings: TenantSettings;
  /** The key's last use was recorded over a minute ago (or never). */
  touchDue: boolean;
  /** This request's count in the tenant's webhook rate-limit window, and when it resets. */
  windowCount: number;
  windowReset: number;
}

/**
 * The active key with this hash for this tenant, with what ingestion needs of the tenant, and
 * the request counted in the tenant's webhook rate-limit window, in one statement (run on the
 * asynchronous-commit pool: the read is exact, only the counter may lose its last increments in
 * a crash). No cache: a revocation takes effect on the very next request, on every process.
 */
export async function findWebhookCredential(sql: postgres.Sql, tenantId: string, keyHash: string): Promise<WebhookCredential | undefined> {
  const rows = await sql<(WebhookCredential & { windowReset: string })[]>`
    with credential as (
      select k.id as "keyId", k.signing_secret as "signingSecret",
             (k.last_used_at is null or k.last_used_at < now() - interval '1 minute') as "touchDue",
             t.status as "tenantStatus", t.plan, t.settings
      from api_keys k join tenants t on t.id = k.tenant_id
      where k.key_hash = ${keyHash} and k.tenant_id = ${tenantId} and k.revoked_at is null
    ), counted as (
      insert into rate_limit_windows (bucket, window_start, count)
      select ${`webhook:${tenantId}`}, date_trunc('minute', now()), 1 from credential
      on conflict (bucket, window_start) do update set count = rate_limit_windows.count + 1
      returning count, extract(epoch from window_start)::bigint + 60 as reset
    )
    select credential.*, counted.count as "windowCount", counted.reset as "windowReset"
    from credential, counted`;
  const row = rows[0];
  return row ? { ...row, windowReset: Number(row.windowReset) } : undefined;
}

/** Records use at most once a minute per key, so busy keys do not write on every request. */
export async function touchApiKey(db: Db, keyId: string): Promise<void> {
  await db
    .update(apiKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(and(eq(apiKeys.id, keyId), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, sql`now() - interval '1 minute'`))));
}
