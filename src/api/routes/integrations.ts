import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { listIntegrations, toIntegrationView } from '../../db/repositories/integrations.js';
import { connectUrlOf, type IntegrationRuntime } from '../../integrations/connection.js';
import { completeOAuthConnect, definitionOf, startOAuthConnect, type ConnectDeps } from '../../integrations/connect.js';
import { connectDirect, disconnect } from '../../integrations/direct.js';
import type { AppDeps, AppEnv, AuthContext } from '../context.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  ConnectBody,
  ConnectCallbackQuery,
  ConnectCallbackResult,
  ConnectedIntegration,
  ConnectInstructions,
  ConnectQuery,
  IntegrationIdParam,
  IntegrationList,
  IntegrationProviderParam,
} from '../schemas/integrations.js';

const listRoute = createRoute({
  method: 'get',
  path: '/v1/integrations',
  tags: ['integrations'],
  summary: "The tenant's connected integrations (never a credential)",
  ...access('member'),
  responses: { 200: jsonResponse(IntegrationList, 'Connections not disconnected'), ...errorResponses(401, 403) },
});

const connectStartRoute = createRoute({
  method: 'get',
  path: '/v1/integrations/connect/{provider}',
  tags: ['integrations'],
  summary:
    "Connect an integration (the catalog's connectUrl): oauth2 providers redirect to the provider; api_key and webhook_only providers answer what to POST. A browser may send the sign-in session cookie instead of a bearer token.",
  ...access('admin'),
  request: { params: IntegrationProviderParam, query: ConnectQuery },
  responses: {
    200: jsonResponse(ConnectInstructions, 'api_key and webhook_only providers: the body POST takes'),
    302: {
      description: "oauth2 providers: to the provider's authorization page with the catalog's scopes, state and PKCE",
      headers: { Location: { schema: { type: 'string' } } },
    },
    ...errorResponses(400, 401, 403, 404, 409),
  },
});

const callbackRoute = createRoute({
  method: 'get',
  path: '/v1/integrations/connect/{provider}/callback',
  tags: ['integrations'],
  summary:
    'Where an oauth2 provider sends the browser back (public: the state is the credential): exchanges the code and stores the tokens encrypted',
  request: { params: IntegrationProviderParam, query: ConnectCallbackQuery },
  responses: {
    200: jsonResponse(ConnectCallbackResult, 'Connected'),
    ...errorResponses(400, 403, 404, 409, 429, 502),
  },
});

const connectRoute = createRoute({
  method: 'post',
  path: '/v1/integrations/connect/{provider}',
  tags: ['integrations'],
  summary:
    'Connect an api_key provider (its required fields, tested against the provider, stored encrypted) or a webhook_only provider (an API key and its webhook URL)',
  ...access('admin'),
  request: {
    params: IntegrationProviderParam,
    body: { required: false, content: { 'application/json': { schema: ConnectBody } } },
  },
  responses: {
    201: jsonResponse(ConnectedIntegration, 'Connected (webhook_only: with the webhook URL and its key, shown once)'),
    ...errorResponses(400, 401, 403, 404, 409, 502),
  },
});

const disconnectRoute = createRoute({
  method: 'delete',
  path: '/v1/integrations/{integrationId}',
  tags: ['integrations'],
  summary:
    "Disconnect: revoked at the provider where it can be, credentials erased, a webhook connection's key revoked",
  ...access('admin'),
  request: { params: IntegrationIdParam },
  responses: { 204: { description: 'Disconnected' }, ...errorResponses(401, 403, 404) },
});

function integrationRuntimeOf(deps: AppDeps): IntegrationRuntime {
  return {
    cipher: deps.skills.cipher,
    allowlist: deps.skills.allowlist,
    resolver: deps.skills.resolver,
    limits: deps.skills.limits,
    clients: deps.identity?.settings.integrationClients ?? {},
    publicBaseUrl: deps.config.publicBaseUrl,
  };
}

/** `/v1/integrations`: connect, list and disconnect a tenant's integrations. */
export function registerIntegrationRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const connectDeps: ConnectDeps = { db: deps.db, runtime: integrationRuntimeOf(deps), clock: deps.clock };
  const actorOf = (c: { var: { auth: AuthContext; requestId: string } }) => ({
    tenant: c.var.auth.tenant,
    userId: c.var.auth.userId,
    requestId: c.var.requestId,
  });

  app.openapi(listRoute, async (c) => {
    const rows = await listIntegrations(deps.db, c.var.auth.tenantId);
    return c.json({ items: rows.map(toIntegrationView), total: rows.length }, 200);
  });

  app.openapi(connectStartRoute, async (c) => {
    const { provider } = c.req.valid('param');
    const definition = definitionOf(provider);
    if (definition.authType !== 'oauth2') {
      return c.json(
        {
          provider,
          authType: definition.authType,
          method: 'POST' as const,
          connectUrl: connectUrlOf(connectDeps.runtime, provider),
          requiredFields: [...definition.requiredFields],
        },
        200,
      );
    }
    const location = await startOAuthConnect(connectDeps, actorOf(c), provider, c.req.valid('query'));
    c.header('Cache-Control', 'no-store');
    return c.redirect(location, 302);
  });

  app.openapi(callbackRoute, async (c) => {
    const { provider } = c.req.valid('param');
    const result = await completeOAuthConnect(connectDeps, provider, c.req.valid('query'), c.get('requestId'));
    c.header('Cache-Control', 'no-store');
    return c.json(result, 200);
  });

  app.openapi(connectRoute, async (c) => {
    const { provider } = c.req.valid('param');
    const body = c.req.header('content-type') ? c.req.valid('json') : {};
    const connected = await connectDirect(connectDeps, actorOf(c), provider, body);
    return c.json(connected, 201);
  });

  app.openapi(disconnectRoute, async (c) => {
    await disconnect(connectDeps, actorOf(c), c.req.valid('param').integrationId);
    return c.body(null, 204);
  });
}
