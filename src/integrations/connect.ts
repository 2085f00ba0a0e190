/**
 * Connecting a tenant's integration, by the catalog's auth type: oauth2 (a redirect to the
 * provider, then its callback), api_key (the required fields, tested against the provider) and
 * webhook_only (an API key and the webhook URL); and disconnecting one.
 */
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import {
  findLiveIntegration,
  lockProviderConnection,
  saveConnection,
  type IntegrationRow,
} from '../db/repositories/integrations.js';
import { membershipOf } from '../db/repositories/memberships.js';
import { consumeOAuthState, createOAuthState } from '../db/repositories/oauth-states.js';
import type { TenantRow } from '../db/schema/tenants.js';
import { integrationCatalog, type IntegrationDefinition } from '../domain/catalog.js';
import { AppError } from '../errors.js';
import { connectUrlOf, type IntegrationRuntime } from './connection.js';
import { sealCredentials } from './credentials.js';
import { ProviderUnreachable } from './http.js';
import { authorizationUrl, exchangeCode, newPkce, TokenRefused } from './oauth.js';
import { oauthSpecOf, SUBDOMAIN } from './providers.js';

/** Users the service signed in, whose role is their membership's (bearer-auth reads it the same way). */
const SIGNED_IN_USER = /^usr_[0-9a-z]{26}$/;

export interface ConnectDeps {
  db: Db;
  runtime: IntegrationRuntime;
  clock: () => Date;
}

export interface Actor {
  tenant: TenantRow;
  userId: string;
  requestId: string;
}

export function definitionOf(provider: string): IntegrationDefinition {
  const definition = integrationCatalog.find((d) => d.provider === provider);
  if (!definition) throw new AppError('integration_not_found', `No integration provider ${provider} in the catalog`);
  return definition;
}

const callbackUrlOf = (runtime: IntegrationRuntime, provider: string) => `${connectUrlOf(runtime, provider)}/callback`;

function oauthClientOf(runtime: IntegrationRuntime, provider: string) {
  const client = runtime.clients[provider];
  if (!client?.clientId) {
    const prefix = `INTEGRATION_${provider.toUpperCase()}`;
    throw new AppError(
      'integration_not_configured',
      `${provider} has no OAuth client on this service: the operator sets ${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET`,
    );
  }
  return client;
}

/** GET connect of an oauth2 provider: the authorize URL to redirect to, its state stored. */
export async function startOAuthConnect(
  deps: ConnectDeps,
  actor: Actor,
  provider: string,
  query: { subdomain?: string | undefined },
): Promise<string> {
  const definition = definitionOf(provider);
  const spec = oauthSpecOf(provider)!;
  const client = oauthClientOf(deps.runtime, provider);
  const subdomain = query.subdomain?.toLowerCase();
  if (spec.subdomain && (!subdomain || !SUBDOMAIN.test(subdomain)))
    throw new AppError('validation_error', `${provider} needs ?subdomain= (your account's, as in acme.zendesk.com)`, [
      { path: 'subdomain', message: 'required: a host label' },
    ]);
  const pkce = spec.pkce ? await newPkce() : undefined;
  const state = await createOAuthState(
    deps.db,
    'connect',
    {
      provider,
      tenantId: actor.tenant.id,
      userId: actor.userId,
      data: { ...(pkce ? { codeVerifier: pkce.verifier } : {}), ...(spec.subdomain ? { subdomain } : {}) },
    },
    deps.clock(),
  );
  return authorizationUrl(spec, client, {
    state,
    redirectUri: callbackUrlOf(deps.runtime, provider),
    scopes: definition.scopes,
    ...(pkce ? { codeChallenge: pkce.challenge } : {}),
    ...(subdomain && spec.subdomain ? { subdomain } : {}),
  });
}

/** One line, bounded: what a provider said goes into a stored reason and an answer. */
// eslint-disable-next-line no-control-regex -- control characters are what it removes
export const oneLine = (text: string) => text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').slice(0, 300);

/**
 * Records a failed authorization: the connection marked `error` with the reason, unless one is
 * connected (a refused reconnect leaves a working connection alone).
 */
async function recordFailure(
  deps: ConnectDeps,
  tenantId: string,
  userId: string,
  provider: string,
  reason: string,
  requestId: string,
): Promise<IntegrationRow> {
  return deps.db.transaction(async (tx) => {
    await lockProviderConnection(tx, tenantId, provider);
    const live = await findLiveIntegration(tx, tenantId, provider, { forUpdate: true });
    if (live?.status === 'connected') return live;
    const { row } = await saveConnection(tx, {
      tenantId,
      provider,
      status: 'error',
      statusReason: reason,
      scopes: [],
      expiresAt: null,
      apiKeyId: null,
      connectedBy: userId,
      now: deps.clock(),
      seal: () => null,
    });
    await appendAudit(tx, {
      tenantId,
      actorType: 'user',
      actorId: userId,
      action: 'integration.failed',
      targetType: 'integration',
      targetId: row.id,
      requestId,
      details: { provider, reason },
    });
    return row;
  });
}

export interface CallbackQuery {
  state?: string | undefined;
  code?: string | undefined;
  error?: string | undefined;
  error_description?: string | undefined;
}

/** The provider's redirect back: the state consumed, the code exchanged, the tokens sealed. */
export async function completeOAuthConnect(
  deps: ConnectDeps,
  provider: string,
  query: CallbackQuery,
  requestId: string,
): Promise<{ integrationId: string; provider: string; status: IntegrationRow['status'] }> {
  const definition = definitionOf(provider);
  if (definition.authType !== 'oauth2')
    throw new AppError('integration_not_found', `${provider} does not connect through OAuth`);
  const stored = query.state ? await consumeOAuthState(deps.db, 'connect', provider, query.state, deps.clock()) : null;
  if (!stored?.tenantId || !stored.userId)
    throw new AppError(
      'invalid_state',
      'The state is missing, unknown, expired or already used: start connecting again',
    );
  const { tenantId, userId } = stored;
  // A signed-in person who stopped being an admin since starting does not finish connecting.
  if (SIGNED_IN_USER.test(userId) && (await membershipOf(deps.db, tenantId, userId))?.role !== 'admin')
    throw new AppError('forbidden', 'Connecting an integration requires the admin role');
  const subdomain = typeof stored.data.subdomain === 'string' ? stored.data.subdomain : undefined;
  if (query.error) {
    const reason = oneLine(
      `${provider} answered ${query.error}${query.error_description ? `: ${query.error_description}` : ''}`,
    );
    const row = await recordFailure(deps, tenantId, userId, provider, reason, requestId);
    const details = { integrationId: row.id, provider, status: row.status };
    if (query.error === 'access_denied')
      throw new AppError('access_denied', `${reason}; ${provider} was not connected`, details);
    throw new AppError('integration_rejected', `${reason}; ${provider} was not connected`, details);
  }
  if (!query.code)
    throw new AppError('validation_error', 'The callback carries neither code nor error', [
      { path: 'code', message: 'required' },
    ]);
  const spec = oauthSpecOf(provider)!;
  const client = oauthClientOf(deps.runtime, provider);
  const now = deps.clock();
  let tokens;
  try {
    tokens = await exchangeCode(
      deps.runtime,
      spec,
      client,
      {
        code: query.code,
        redirectUri: callbackUrlOf(deps.runtime, provider),
        ...(typeof stored.data.codeVerifier === 'string' ? { codeVerifier: stored.data.codeVerifier } : {}),
        ...(subdomain ? { subdomain } : {}),
      },
      now,
    );
  } catch (err) {
    if (err instanceof ProviderUnreachable)
      throw new AppError('provider_unavailable', `${provider} did not answer the code exchange: ${err.message}`);
    if (!(err instanceof TokenRefused)) throw err;
    const row = await recordFailure(deps, tenantId, userId, provider, oneLine(err.message), requestId);
    throw new AppError('integration_rejected', `${oneLine(err.message)}; ${provider} was not connected`, {
      integrationId: row.id,
      provider,
      status: row.status,
    });
  }
  const row = await deps.db.transaction(async (tx) => {
    const saved = await saveConnection(tx, {
      tenantId,
      provider,
      status: 'connected',
      statusReason: null,
      scopes: tokens.scopes ?? definition.scopes,
      expiresAt: tokens.expiresAt,
      apiKeyId: null,
      connectedBy: userId,
      now,
      seal: (id) =>
        sealCredentials(
          deps.runtime.cipher,
          { tenantId, id, provider },
          {
            kind: 'oauth2',
            accessToken: tokens.accessToken,
            ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
            ...(tokens.tokenType ? { tokenType: tokens.tokenType } : {}),
            ...(subdomain ? { subdomain } : {}),
            ...(Object.keys(tokens.extra).length > 0 ? { extra: tokens.extra } : {}),
          },
        ),
    });
    await appendAudit(tx, {
      tenantId,
      actorType: 'user',
      actorId: userId,
      action: 'integration.connected',
      targetType: 'integration',
      targetId: saved.row.id,
      requestId,
      details: { provider, scopes: saved.row.scopes },
    });
    return saved.row;
  });
  return { integrationId: row.id, provider, status: row.status };
}
