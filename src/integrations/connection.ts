/**
 * A tenant's connection, opened for a call: found (or a clear reason why there is none), its
 * credentials unsealed, its OAuth token refreshed when it expires within 5 minutes (under the
 * row's lock, so two callers do not both spend the refresh token), its use recorded, and the API
 * base and headers of the provider for it.
 */
import { and, asc, eq, isNotNull, lt } from 'drizzle-orm';
import type { IntegrationClient } from '../auth/settings.js';
import { transactionOnce, type Db } from '../db/client.js';
import { findLiveIntegration, updateIntegration, type IntegrationRow } from '../db/repositories/integrations.js';
import { integrations } from '../db/schema/identity.js';
import type { TenantRow } from '../db/schema/tenants.js';
import { integrationCatalog } from '../domain/catalog.js';
import type { SkillCipher } from '../skills/crypto.js';
import { SkillFailure } from '../skills/failure.js';
import { apiKeySpecOf } from './api-key-providers.js';
import { openCredentials, sealCredentials, type Credentials, type OAuthCredentials } from './credentials.js';
import { ProviderUnreachable, type OutboundRuntime } from './http.js';
import { refreshTokens, TokenRefused } from './oauth.js';
import { endpoint, oauthSpecOf } from './providers.js';

/** Everything integration calls need: outbound bounds and SSRF rules, the key, the OAuth clients. */
export interface IntegrationRuntime extends OutboundRuntime {
  cipher: SkillCipher;
  clients: Record<string, IntegrationClient>;
  publicBaseUrl: string;
}

/** Refresh a token this close to its expiry, before using it. */
export const REFRESH_MARGIN_MS = 5 * 60 * 1000;

export interface OpenConnection {
  row: IntegrationRow;
  credentials: Credentials;
  apiBase: string;
  headers: Record<string, string>;
  /** Set when the API base is a URL the tenant gave (SSRF rules apply to it). */
  tenantUrl?: { allowPlainHttp: boolean };
  /** Values never to show in an answer (the tokens and keys). */
  secrets: string[];
}

export const connectUrlOf = (runtime: Pick<IntegrationRuntime, 'publicBaseUrl'>, provider: string) =>
  `${runtime.publicBaseUrl.replace(/\/+$/, '')}/v1/integrations/connect/${provider}`;

const notConnected = (runtime: IntegrationRuntime, provider: string, why?: string) =>
  new SkillFailure(
    'integration_not_connected',
    `${why ? `${why}; ` : ''}connect ${provider} at ${connectUrlOf(runtime, provider)}`,
  );

async function markError(db: Pick<Db, 'update'>, row: IntegrationRow, reason: string, now: Date): Promise<void> {
  await updateIntegration(db, row.tenantId, row.id, { status: 'error', statusReason: reason, updatedAt: now });
}

type Refreshed = { ok: true; row: IntegrationRow; credentials: OAuthCredentials } | { ok: false; reason: string };

/** Refreshes under the row lock; a refusal marks the connection `error` (committed, then thrown). */
async function refreshUnderLock(
  db: Db,
  runtime: IntegrationRuntime,
  row: IntegrationRow,
  now: Date,
): Promise<Refreshed> {
  const spec = oauthSpecOf(row.provider)!;
  const client = runtime.clients[row.provider];
  // Once: the refresh spends the old refresh token at the provider, which must not happen twice.
  return transactionOnce(db, async (tx) => {
    const [locked] = await tx.select().from(integrations).where(eq(integrations.id, row.id)).for('update');
    if (!locked || locked.status !== 'connected' || !locked.credentials)
      return { ok: false, reason: 'the connection changed while it was being refreshed' };
    const current = openCredentials(runtime.cipher, locked, locked.credentials) as OAuthCredentials;
    // Another caller refreshed while this one waited for the lock (the expiry moved), or no longer due.
    const moved = locked.expiresAt?.getTime() !== row.expiresAt?.getTime();
    if (!locked.expiresAt || moved || locked.expiresAt.getTime() - now.getTime() > REFRESH_MARGIN_MS)
      return { ok: true, row: locked, credentials: current };
    const fail = async (reason: string): Promise<Refreshed> => {
      await markError(tx, locked, reason, now);
      return { ok: false, reason };
    };
    if (!current.refreshToken) return fail('the access token expired and the provider gave no refresh token');
    if (!client?.clientId) return fail(`INTEGRATION_${row.provider.toUpperCase()}_CLIENT_ID is not set to refresh`);
    try {
      const tokens = await refreshTokens(
        runtime,
        spec,
        client,
        { refreshToken: current.refreshToken, ...(current.subdomain ? { subdomain: current.subdomain } : {}) },
        now,
      );
      const next: OAuthCredentials = {
        ...current,
        accessToken: tokens.accessToken,
        // Providers that do not rotate refresh tokens send none back: the old one stays good.
        refreshToken: tokens.refreshToken ?? current.refreshToken,
        ...(tokens.tokenType ? { tokenType: tokens.tokenType } : {}),
      };
      const [updated] = await tx
        .update(integrations)
        .set({
          credentials: sealCredentials(runtime.cipher, locked, next),
          expiresAt: tokens.expiresAt,
          ...(tokens.scopes ? { scopes: tokens.scopes } : {}),
          updatedAt: now,
        })
        .where(eq(integrations.id, locked.id))
        .returning();
      return { ok: true, row: updated!, credentials: next };
    } catch (err) {
      if (err instanceof TokenRefused) return fail(`token refresh refused: ${err.message}`);
      if (err instanceof ProviderUnreachable && locked.expiresAt.getTime() > now.getTime())
        return { ok: true, row: locked, credentials: current }; // still valid: refresh on a later use
      if (err instanceof ProviderUnreachable)
        throw new SkillFailure('provider_unavailable', `${row.provider}: ${err.message}`);
      throw err;
    }
  });
}

function oauthAccess(runtime: IntegrationRuntime, row: IntegrationRow, credentials: OAuthCredentials) {
  const spec = oauthSpecOf(row.provider)!;
  return {
    apiBase: endpoint(spec.apiBase, { override: runtime.clients[row.provider]?.url, subdomain: credentials.subdomain }),
    headers: { ...spec.apiHeaders, authorization: `Bearer ${credentials.accessToken}` },
    secrets: [credentials.accessToken, ...(credentials.refreshToken ? [credentials.refreshToken] : [])],
  };
}

/** The tenant's connection to `provider`, ready for a call; a SkillFailure says why not. */
export async function openConnection(
  db: Db,
  runtime: IntegrationRuntime,
  tenant: TenantRow,
  provider: string,
  now: Date,
): Promise<OpenConnection> {
  const definition = integrationCatalog.find((d) => d.provider === provider);
  if (!definition) throw new SkillFailure('invalid_config', `${provider} is not a provider of the integration catalog`);
  if (definition.authType === 'webhook_only')
    throw new SkillFailure('invalid_config', `${provider} only sends webhooks to this service; it has no actions`);
  let row = await findLiveIntegration(db, tenant.id, provider);
  if (!row || row.status === 'pending' || !row.credentials) throw notConnected(runtime, provider);
  if (row.status === 'error')
    throw notConnected(runtime, provider, `the ${provider} connection is in error (${row.statusReason ?? 'unknown'})`);
  let credentials: Credentials;
  try {
    credentials = openCredentials(runtime.cipher, row, row.credentials);
  } catch (err) {
    throw new SkillFailure('secret_unreadable', (err as Error).message);
  }
  if (credentials.kind === 'oauth2' && row.expiresAt && row.expiresAt.getTime() - now.getTime() <= REFRESH_MARGIN_MS) {
    const refreshed = await refreshUnderLock(db, runtime, row, now);
    if (!refreshed.ok)
      throw notConnected(runtime, provider, `the ${provider} connection is in error (${refreshed.reason})`);
    row = refreshed.row;
    credentials = refreshed.credentials;
  }
  await updateIntegration(db, tenant.id, row.id, { lastUsedAt: now, updatedAt: row.updatedAt });
  if (credentials.kind === 'oauth2') return { row, credentials, ...oauthAccess(runtime, row, credentials) };
  const spec = apiKeySpecOf(provider)!;
  const base = spec.apiBase(credentials.fields);
  const override = spec.tenantUrlField ? undefined : runtime.clients[provider]?.url;
  return {
    row,
    credentials,
    apiBase: override ? endpoint(base, { override }) : base,
    headers: spec.headers(credentials.fields),
    ...(spec.tenantUrlField ? { tenantUrl: { allowPlainHttp: tenant.settings.allowHttpSkills === true } } : {}),
    secrets: spec.secrets.map((name) => credentials.fields[name]!).filter((v) => !!v),
  };
}

/** The provider refused the stored token (401): the connection is marked `error` so people see it. */
export async function markRefused(db: Pick<Db, 'update'>, row: IntegrationRow, now: Date): Promise<void> {
  await markError(db, row, `${row.provider} refused the stored credentials (401); connect it again`, now);
}

/**
 * A pass over every tenant's oauth2 connections whose token expires within the margin (soonest
 * first, at most `limit`): each refreshed as a use would, so a token unused for a while does not
 * lapse. For the housekeeping of a process that has the integration settings.
 */
export async function refreshDueConnections(
  db: Db,
  runtime: IntegrationRuntime,
  now: Date,
  limit = 100,
): Promise<{ refreshed: number; failed: number }> {
  const due = await db
    .select()
    .from(integrations)
    .where(
      and(
        eq(integrations.status, 'connected'),
        isNotNull(integrations.expiresAt),
        lt(integrations.expiresAt, new Date(now.getTime() + REFRESH_MARGIN_MS)),
      ),
    )
    .orderBy(asc(integrations.expiresAt))
    .limit(limit);
  let refreshed = 0;
  let failed = 0;
  for (const row of due) {
    if (!oauthSpecOf(row.provider)) continue;
    try {
      if ((await refreshUnderLock(db, runtime, row, now)).ok) refreshed++;
      else failed++;
    } catch {
      failed++; // the provider did not answer: the next pass, or the next use, tries again
    }
  }
  return { refreshed, failed };
}
