/**
 * Connections made without a redirect: an api_key provider's fields (checked, tested against the
 * provider, sealed) and a webhook_only provider's API key and webhook URL; and disconnecting any
 * connection (revoked at the provider where it can be, best effort).
 */
import { appendAudit } from '../db/repositories/audit.js';
import {
  findIntegration,
  saveConnection,
  toIntegrationView,
  updateIntegration,
} from '../db/repositories/integrations.js';
import { issueApiKey, revokeApiKey } from '../db/repositories/api-keys.js';
import type { TenantRow } from '../db/schema/tenants.js';
import { integrationCatalog, type IntegrationDefinition } from '../domain/catalog.js';
import { AppError } from '../errors.js';
import { outboundUrlRefusal } from '../skills/ssrf.js';
import { apiKeySpecOf, reasonOf, withoutSecrets, type ApiKeyProviderSpec, type Fields } from './api-key-providers.js';
import { connectUrlOf } from './connection.js';
import { definitionOf, oneLine, type Actor, type ConnectDeps } from './connect.js';
import { openCredentials, sealCredentials } from './credentials.js';
import { callProvider, ProviderUnreachable, ProviderUrlRefused } from './http.js';
import { revokeGrant } from './oauth.js';
import { endpoint, oauthSpecOf } from './providers.js';

type Problem = { path: string; message: string };

const invalid = (problems: Problem[]) =>
  new AppError('validation_error', problems.map((p) => `${p.path}: ${p.message}`).join('; '), problems);

/** The body of POST connect for an api_key provider: exactly its fields, each a bounded string. */
function checkFields(
  deps: ConnectDeps,
  definition: IntegrationDefinition,
  spec: ApiKeyProviderSpec,
  body: unknown,
  tenant: TenantRow,
): Fields {
  const problems: Problem[] = [];
  const given = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  for (const name of Object.keys(given))
    if (!definition.requiredFields.includes(name))
      problems.push({
        path: name,
        message: `unknown field; ${definition.provider} takes ${definition.requiredFields.join(', ')}`,
      });
  const fields: Fields = {};
  for (const name of definition.requiredFields) {
    const value = given[name];
    if (typeof value !== 'string' || value.trim() === '') {
      problems.push({ path: name, message: 'required (a non-empty string)' });
      continue;
    }
    const v = value.trim();
    const why = v.length > 2048 ? 'must be at most 2048 characters' : spec.fields[name]?.(v);
    if (why) problems.push({ path: name, message: why });
    else fields[name] = v;
  }
  const urlField = spec.tenantUrlField;
  if (problems.length === 0 && urlField) {
    // Its scheme and an address written into it, now; a host name when it is called.
    const refusal = outboundUrlRefusal(new URL(fields[urlField]!), {
      allowHttp: tenant.settings.allowHttpSkills === true,
      allowlist: deps.runtime.allowlist,
    });
    if (refusal) problems.push({ path: urlField, message: refusal });
  }
  if (problems.length > 0) throw invalid(problems);
  return fields;
}

/** The provider's test call with the fields: refused credentials are 400, no answer 502. */
async function testCredentials(deps: ConnectDeps, spec: ApiKeyProviderSpec, fields: Fields, tenant: TenantRow) {
  if (!spec.test) return;
  const base = spec.apiBase(fields);
  const override = spec.tenantUrlField ? undefined : deps.runtime.clients[spec.provider]?.url;
  let answer;
  try {
    answer = await callProvider(deps.runtime, {
      method: spec.test.method,
      url: `${override ? endpoint(base, { override }) : base}${spec.test.path}`,
      headers: spec.headers(fields),
      ...(spec.test.body !== undefined ? { json: spec.test.body } : {}),
      ...(spec.tenantUrlField ? { tenantUrl: { allowPlainHttp: tenant.settings.allowHttpSkills === true } } : {}),
    });
  } catch (err) {
    if (err instanceof ProviderUrlRefused)
      throw invalid([{ path: spec.tenantUrlField ?? 'url', message: err.message }]);
    if (err instanceof ProviderUnreachable)
      throw new AppError('provider_unavailable', `${spec.provider} did not answer the test call: ${err.message}`);
    throw err;
  }
  if (answer.status >= 500 || answer.status === 429)
    throw new AppError(
      'provider_unavailable',
      `${spec.provider} answered ${answer.status} to the test call; try again`,
    );
  const refusal =
    answer.status >= 200 && answer.status < 300
      ? spec.test.refusal?.(answer.body)
      : (reasonOf(answer.body) ?? `HTTP ${answer.status}`);
  if (refusal)
    throw new AppError(
      'integration_rejected',
      `${spec.provider} refused the credentials (${answer.status}): ${oneLine(withoutSecrets(refusal, spec, fields))}`,
      { provider: spec.provider, status: answer.status },
    );
}

export interface WebhookConnection {
  url: string;
  keyId: string;
  key: string;
  signingSecret: string;
}

/** POST connect: api_key and webhook_only providers (oauth2 ones connect through GET). */
export async function connectDirect(
  deps: ConnectDeps,
  actor: Actor,
  provider: string,
  body: unknown,
): Promise<ReturnType<typeof toIntegrationView> & { webhook?: WebhookConnection }> {
  // The body is judged first (as every route judges its input): a provider not in the catalog
  // takes no field, so each one given is unknown; with none given it is 404.
  if (!integrationCatalog.some((d) => d.provider === provider) && body && typeof body === 'object') {
    const given = Object.keys(body);
    if (given.length > 0)
      throw invalid(given.map((path) => ({ path, message: `unknown field; ${provider} is not in the catalog` })));
  }
  const definition = definitionOf(provider);
  if (definition.authType === 'oauth2')
    throw new AppError(
      'validation_error',
      `${provider} connects through OAuth: open GET ${connectUrlOf(deps.runtime, provider)} in a browser as an admin`,
    );
  if (definition.authType === 'webhook_only') {
    if (body && typeof body === 'object' && Object.keys(body).length > 0)
      throw invalid(Object.keys(body).map((path) => ({ path, message: `unknown field; ${provider} takes none` })));
    return connectWebhook(deps, actor, provider);
  }
  const spec = apiKeySpecOf(provider)!;
  const fields = checkFields(deps, definition, spec, body, actor.tenant);
  await testCredentials(deps, spec, fields, actor.tenant);
  const row = await deps.db.transaction(async (tx) => {
    const { row: saved } = await saveConnection(tx, {
      tenantId: actor.tenant.id,
      provider,
      status: 'connected',
      statusReason: null,
      scopes: [],
      expiresAt: null,
      apiKeyId: null,
      connectedBy: actor.userId,
      now: deps.clock(),
      seal: (id) =>
        sealCredentials(deps.runtime.cipher, { tenantId: actor.tenant.id, id, provider }, { kind: 'api_key', fields }),
    });
    await audit(tx, actor, 'integration.connected', saved.id, { provider });
    return saved;
  });
  return toIntegrationView(row);
}

async function connectWebhook(deps: ConnectDeps, actor: Actor, provider: string) {
  const tenantId = actor.tenant.id;
  return deps.db.transaction(async (tx) => {
    const issued = await issueApiKey(tx, tenantId, `integration:${provider}`);
    const { row, previous } = await saveConnection(tx, {
      tenantId,
      provider,
      status: 'connected',
      statusReason: null,
      scopes: [],
      expiresAt: null,
      apiKeyId: issued.keyId,
      connectedBy: actor.userId,
      now: deps.clock(),
      seal: () => null,
    });
    // Connecting again replaces the key: the one shown before stops working.
    if (previous?.apiKeyId) await revokeApiKey(tx, tenantId, previous.apiKeyId);
    await appendAudit(tx, {
      tenantId,
      actorType: 'user',
      actorId: actor.userId,
      action: 'api_key.created',
      targetType: 'api_key',
      targetId: issued.keyId,
      requestId: actor.requestId,
      details: { name: `integration:${provider}`, prefix: issued.prefix },
    });
    await audit(tx, actor, 'integration.connected', row.id, { provider, apiKeyId: issued.keyId });
    const base = deps.runtime.publicBaseUrl.replace(/\/+$/, '');
    return {
      ...toIntegrationView(row),
      webhook: {
        url: `${base}/v1/webhooks/${tenantId}/${provider}`,
        keyId: issued.keyId,
        key: issued.key,
        signingSecret: issued.signingSecret,
      },
    };
  });
}

function audit(
  tx: Parameters<typeof appendAudit>[0],
  actor: Actor,
  action: string,
  integrationId: string,
  details: Record<string, unknown>,
) {
  return appendAudit(tx, {
    tenantId: actor.tenant.id,
    actorType: 'user',
    actorId: actor.userId,
    action,
    targetType: 'integration',
    targetId: integrationId,
    requestId: actor.requestId,
    details,
  });
}

/** Revokes an oauth2 connection's grant at the provider; false when it could not (best effort). */
async function revokeAtProvider(
  deps: ConnectDeps,
  row: { tenantId: string; id: string; provider: string; credentials: string | null },
) {
  const spec = oauthSpecOf(row.provider);
  const client = deps.runtime.clients[row.provider];
  if (!spec?.revoke || !row.credentials || !client?.clientId) return false;
  try {
    const credentials = openCredentials(deps.runtime.cipher, row, row.credentials);
    if (credentials.kind !== 'oauth2') return false;
    // A short deadline: disconnecting does not wait long on a provider.
    const runtime = {
      ...deps.runtime,
      limits: { ...deps.runtime.limits, timeoutMs: Math.min(deps.runtime.limits.timeoutMs, 5000) },
    };
    return await revokeGrant(runtime, spec, client, credentials);
  } catch {
    return false;
  }
}

/** DELETE: revoked at the provider where it can be, credentials erased, its API key revoked. */
export async function disconnect(deps: ConnectDeps, actor: Actor, integrationId: string): Promise<void> {
  const tenantId = actor.tenant.id;
  const current = await findIntegration(deps.db, tenantId, integrationId);
  if (!current || current.status === 'disconnected')
    throw new AppError('integration_not_found', 'No connected integration has that identifier');
  const revoked = await revokeAtProvider(deps, current);
  await deps.db.transaction(async (tx) => {
    const row = await findIntegration(tx, tenantId, integrationId, { forUpdate: true });
    if (!row || row.status === 'disconnected')
      throw new AppError('integration_not_found', 'No connected integration has that identifier');
    await updateIntegration(tx, tenantId, integrationId, {
      status: 'disconnected',
      statusReason: null,
      credentials: null,
      expiresAt: null,
      updatedAt: deps.clock(),
    });
    const keyRevoked = row.apiKeyId ? await revokeApiKey(tx, tenantId, row.apiKeyId) : false;
    await audit(tx, actor, 'integration.disconnected', integrationId, {
      provider: row.provider,
      revokedAtProvider: revoked,
      ...(row.apiKeyId ? { apiKeyId: row.apiKeyId, apiKeyRevoked: keyRevoked } : {}),
    });
  });
}
