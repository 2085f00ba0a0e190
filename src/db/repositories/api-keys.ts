import { and, count, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import { olderThan } from '../keyset.js';
import type postgres from 'postgres';
import type { Db } from '../client.js';
import { generateApiKey, generateSigningSecret } from '../../auth/api-keys.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
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
    .where(and(eq(apiKeys.tenantId, tenantId), after ? olderThan(apiKeys.createdAt, apiKeys.id, after) : undefined))
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

type CredentialRow = Omit<WebhookCredential, 'windowReset'> & { n: string; windowReset: string };

/**
 * The active key for each (tenant, key hash), with what ingestion needs of the tenant, and each
 * request counted in its tenant's webhook rate-limit window: one statement for a whole batch of
 * concurrent requests, so the tenant's window row is updated once per batch. No cache: a
 * revocation takes effect on the very next request, on every process. The query is returned
 * unsent, so that a caller can pipeline it inside a transaction; `credentialsInOrder` reads its
 * rows.
 */
export function webhookCredentialsQuery(sql: postgres.Sql, lookups: Array<{ tenantId: string; keyHash: string }>) {
  return sql<CredentialRow[]>`
    with request as (
      select * from unnest(${lookups.map((l) => l.tenantId)}::text[], ${lookups.map((l) => l.keyHash)}::text[])
        with ordinality as r(tenant_id, key_hash, n)
    ), credential as (
      select r.n, r.tenant_id, k.id as "keyId", k.signing_secret as "signingSecret",
             (k.last_used_at is null or k.last_used_at < now() - interval '1 minute') as "touchDue",
             t.status as "tenantStatus", t.plan, t.settings,
             row_number() over (partition by r.tenant_id order by r.n) as position,
             count(*) over (partition by r.tenant_id) as in_batch
      from request r
      join api_keys k on k.key_hash = r.key_hash and k.tenant_id = r.tenant_id and k.revoked_at is null
      join tenants t on t.id = k.tenant_id
    ), counted as (
      insert into rate_limit_windows (bucket, window_start, count)
      select distinct 'webhook:' || tenant_id, date_trunc('minute', now()), in_batch from credential
      order by 1
      on conflict (bucket, window_start) do update set count = rate_limit_windows.count + excluded.count
      returning bucket, count, extract(epoch from window_start)::bigint + 60 as reset
    )
    select c.n, c."keyId", c."signingSecret", c."touchDue", c."tenantStatus", c.plan, c.settings,
           counted.count - c.in_batch + c.position as "windowCount", counted.reset as "windowReset"
    from credential c join counted on counted.bucket = 'webhook:' || c.tenant_id`;
}

/** The rows of `webhookCredentialsQuery` in input order; `undefined` for no such active key. */
export function credentialsInOrder(rows: CredentialRow[], lookups: number): Array<WebhookCredential | undefined> {
  const byPosition = new Map(
    rows.map(({ n, windowReset, ...row }) => [
      Number(n),
      { ...row, windowCount: Number(row.windowCount), windowReset: Number(windowReset) },
    ]),
  );
  return Array.from({ length: lookups }, (_, i) => byPosition.get(i + 1));
}

/** `webhookCredentialsQuery` on its own (for a request that is refused before it can be batched). */
export async function findWebhookCredentials(
  sql: postgres.Sql,
  lookups: Array<{ tenantId: string; keyHash: string }>,
): Promise<Array<WebhookCredential | undefined>> {
  return credentialsInOrder(await webhookCredentialsQuery(sql, lookups), lookups.length);
}

/** Records use at most once a minute per key, so busy keys do not write on every request. */
export async function touchApiKey(db: Db, keyId: string): Promise<void> {
  await db
    .update(apiKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(
      and(
        eq(apiKeys.id, keyId),
        or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, sql`now() - interval '1 minute'`)),
      ),
    );
}

/**
 * Which (tenant, key hash) pairs name an active key of an active tenant: read only, counting
 * nothing, for judging a webhook's key before its body is read (ADR 0252).
 */
export async function findActiveWebhookKeys(
  sql: postgres.Sql,
  lookups: Array<{ tenantId: string; keyHash: string }>,
): Promise<boolean[]> {
  const rows = await sql<Array<{ n: string }>>`
    select r.n
    from unnest(${lookups.map((l) => l.tenantId)}::text[], ${lookups.map((l) => l.keyHash)}::text[]) with ordinality as r(tenant_id, key_hash, n)
    join api_keys k on k.key_hash = r.key_hash and k.tenant_id = r.tenant_id and k.revoked_at is null
    join tenants t on t.id = k.tenant_id and t.status = 'active'`;
  const found = new Set(rows.map((row) => Number(row.n)));
  return lookups.map((_, i) => found.has(i + 1));
}

/**
 * A new webhook API key of the tenant (`POST /v1/api-keys`, a webhook_only integration's): at
 * most MAX_ACTIVE_KEYS_PER_TENANT active, serialised per tenant so the cap holds under
 * concurrent requests. The plaintext key and secret are returned only here.
 */
export async function issueApiKey(
  tx: Pick<Db, 'insert' | 'execute' | 'select'>,
  tenantId: string,
  name: string,
): Promise<{ keyId: string; key: string; signingSecret: string; prefix: string; createdAt: Date }> {
  const { key, keyHash, prefix } = generateApiKey();
  const signingSecret = generateSigningSecret();
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`api-keys:${tenantId}`}))`);
  if ((await countActiveKeys(tx, tenantId)) >= MAX_ACTIVE_KEYS_PER_TENANT) {
    throw new AppError(
      'conflict',
      `A tenant can have at most ${MAX_ACTIVE_KEYS_PER_TENANT} active API keys; revoke one first`,
    );
  }
  const [created] = await tx
    .insert(apiKeys)
    .values({ id: newId('key'), tenantId, name, keyHash, prefix, signingSecret })
    .returning();
  return { keyId: created!.id, key, signingSecret, prefix, createdAt: created!.createdAt };
}

/** Revokes a key of the tenant if it is active; whether it was. */
export async function revokeApiKey(tx: Pick<Db, 'update'>, tenantId: string, keyId: string): Promise<boolean> {
  const rows = await tx
    .update(apiKeys)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(apiKeys.id, keyId), eq(apiKeys.tenantId, tenantId), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  return rows.length > 0;
}
