import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { integrations, memberships, userAccounts } from '../../src/db/schema/identity.js';
import { newId } from '../../src/ids.js';
import { apiKeys } from '../../src/db/schema/ingestion.js';
import { startProviderServer, type ProviderServer } from '../helpers/integration-provider-server.js';
import { expectConformsToDocument } from '../helpers/openapi-conformance.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { fixture, postWebhook } from '../helpers/webhooks.js';

const PUBLIC = 'http://api.test';
let svc: TestService;
let github: ProviderServer;
let slack: ProviderServer;
let datadog: ProviderServer;
let opsgenie: ProviderServer;
let tenant: { tenantId: string; admin: string; member: string };
let other: { tenantId: string; admin: string; member: string };

const client = (p: ProviderServer) => ({ clientId: p.clientId, clientSecret: p.clientSecret, url: p.url });

beforeAll(async () => {
  [github, slack, datadog, opsgenie] = await Promise.all([
    startProviderServer('github'),
    startProviderServer('slack'),
    startProviderServer('datadog'),
    startProviderServer('opsgenie'),
  ]);
  svc = await startTestService({
    publicBaseUrl: PUBLIC,
    skills: { allowedNetworks: ['127.0.0.1/32'], limits: { timeoutMs: 2000, retryBaseDelayMs: 10 } },
    identity: {
      integrationClients: {
        github: client(github),
        slack: client(slack),
        datadog: { clientId: '', clientSecret: undefined, url: datadog.url },
        opsgenie: { clientId: '', clientSecret: undefined, url: opsgenie.url },
      },
    },
  });
  tenant = await svc.newTenant();
  other = await svc.newTenant();
});
afterAll(async () => {
  await svc?.stop();
  await Promise.all([github, slack, datadog, opsgenie].map((p) => p?.close()));
});

/** GET connect without following the redirect: the provider's authorize URL. */
async function startConnect(provider: string, token: string): Promise<Response> {
  return fetch(`${svc.baseUrl}/v1/integrations/connect/${provider}`, {
    headers: { authorization: `Bearer ${token}` },
    redirect: 'manual',
  });
}

/** The whole browser flow: connect → provider's authorize page (approves) → our callback. */
async function connectOAuth(provider: string, token: string) {
  const start = await startConnect(provider, token);
  expect(start.status).toBe(302);
  const authorize = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  expect(authorize.status).toBe(302);
  const back = new URL(authorize.headers.get('location')!);
  expect(`${back.origin}${back.pathname}`).toBe(`${PUBLIC}/v1/integrations/connect/${provider}/callback`);
  const callbackPath = `${back.pathname}${back.search}`;
  return { callbackPath, res: await svc.api('GET', callbackPath) };
}

const rowOf = async (integrationId: string) =>
  (await svc.database.db.select().from(integrations).where(eq(integrations.id, integrationId)))[0]!;

describe('oauth2 providers', () => {
  let githubId: string;

  it("redirects to the provider with the catalog's scopes, state, PKCE and our callback", async () => {
    const start = await startConnect('github', tenant.admin);
    expect(start.status).toBe(302);
    const location = new URL(start.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(`${github.url}/login/oauth/authorize`);
    const catalog = await svc.api('GET', '/v1/integrations/catalog');
    const entry = catalog.body.items.find((i: { provider: string }) => i.provider === 'github');
    expect(entry.connectUrl).toBe(`${PUBLIC}/v1/integrations/connect/github`);
    expect(location.searchParams.get('scope')).toBe(entry.scopes.join(' '));
    expect(location.searchParams.get('client_id')).toBe(github.clientId);
    expect(location.searchParams.get('redirect_uri')).toBe(`${PUBLIC}/v1/integrations/connect/github/callback`);
    expect(location.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    // Slack joins its scopes with commas.
    const slackStart = await startConnect('slack', tenant.admin);
    const slackScopes = new URL(slackStart.headers.get('location')!).searchParams.get('scope');
    expect(slackScopes).toBe('channels:read,channels:history,channels:manage,chat:write,users:read');
  });

  it('the callback stores the tokens sealed and the connection lists as connected', async () => {
    const { callbackPath, res } = await connectOAuth('github', tenant.admin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      integrationId: expect.stringMatching(/^int_/),
      provider: 'github',
      status: 'connected',
    });
    githubId = res.body.integrationId;
    await expectConformsToDocument(svc, '/v1/integrations/connect/{provider}/callback', 'get', 200, res.body);
    const [token] = [...github.validTokens];
    const exchange = github.hits('/login/oauth/access_token')[0]!;
    expect(new URLSearchParams(exchange.body).get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const row = await rowOf(githubId);
    expect(row).toMatchObject({ tenantId: tenant.tenantId, status: 'connected', scopes: ['repo', 'read:org'] });
    expect(row.credentials).toMatch(/^v1\./);
    expect(row.credentials).not.toContain(token!);
    expect(row.connectedBy).toBe('user-admin');

    const list = await svc.api('GET', '/v1/integrations', { token: tenant.member });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(list.body.items.length);
    expect(list.body.items).toContainEqual({
      integrationId: githubId,
      provider: 'github',
      status: 'connected',
      statusReason: null,
      scopes: ['repo', 'read:org'],
      connectedAt: expect.any(String),
      lastUsedAt: null,
      connectedBy: 'user-admin',
    });
    expect(JSON.stringify(list.body)).not.toContain(token!);
    await expectConformsToDocument(svc, '/v1/integrations', 'get', 200, list.body);
    const audit = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, githubId), eq(auditLog.action, 'integration.connected')));
    expect(audit).toHaveLength(1);

    // The same callback again: its state was used.
    const replay = await svc.api('GET', callbackPath);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_state');
    await expectConformsToDocument(svc, '/v1/integrations/connect/{provider}/callback', 'get', 400, replay.body);
  });

  it('a browser connects with the session cookie; a code the provider refuses (in a 200) is 400 and marks error', async () => {
    const start = await fetch(`${svc.baseUrl}/v1/integrations/connect/github`, {
      headers: { cookie: `iis_session=${other.admin}` },
      redirect: 'manual',
    });
    expect(start.status).toBe(302);
    const authorize = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const back = new URL(authorize.headers.get('location')!);
    back.searchParams.set('code', 'not-a-code-github-issued');
    const res = await svc.api('GET', `${back.pathname}${back.search}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('integration_rejected');
    expect(res.body.message).toContain('bad_verification_code');
    const row = await rowOf(res.body.details.integrationId);
    expect(row).toMatchObject({ tenantId: other.tenantId, status: 'error', credentials: null });
    // Tidy: the other tenant's list stays empty for the isolation checks below.
    await svc.database.db.delete(integrations).where(eq(integrations.id, row.id));
    const noCookie = await fetch(`${svc.baseUrl}/v1/integrations/connect/github`, { redirect: 'manual' });
    expect(noCookie.status).toBe(401);
  });

  it('refuses a forged or missing state', async () => {
    const forged = await svc.api('GET', '/v1/integrations/connect/github/callback?code=abc&state=forged-state-value');
    expect(forged.status).toBe(400);
    expect(forged.body.error).toBe('invalid_state');
    const missing = await svc.api('GET', '/v1/integrations/connect/github/callback?code=abc');
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_state');
  });

  it('a provider error marks the connection error with the reason; connecting again succeeds', async () => {
    slack.denyNext = true;
    const denied = await connectOAuth('slack', tenant.admin);
    expect(denied.res.status).toBe(403);
    expect(denied.res.body.error).toBe('access_denied');
    expect(denied.res.body.message).toContain('slack answered access_denied');
    const id = denied.res.body.details.integrationId as string;
    expect(await rowOf(id)).toMatchObject({ status: 'error', credentials: null });
    expect((await rowOf(id)).statusReason).toContain('The user has denied your application access.');
    const list = await svc.api('GET', '/v1/integrations', { token: tenant.admin });
    expect(list.body.items.find((i: { provider: string }) => i.provider === 'slack')).toMatchObject({
      status: 'error',
      statusReason: expect.stringContaining('access_denied'),
    });

    const again = await connectOAuth('slack', tenant.admin);
    expect(again.res.status).toBe(200);
    expect(again.res.body).toEqual({ integrationId: id, provider: 'slack', status: 'connected' });
    expect((await rowOf(id)).statusReason).toBeNull();
  });

  it('refuses the callback of a signed-in person who is no longer an admin', async () => {
    const userId = newId('usr');
    await svc.database.db.insert(userAccounts).values({ id: userId, email: `${userId}@example.test` });
    await svc.database.db
      .insert(memberships)
      .values({ tenantId: other.tenantId, userId, role: 'admin', addedBy: 'operator' });
    const token = svc.token(other.tenantId, 'admin', { sub: userId });
    const start = await startConnect('github', token);
    expect(start.status).toBe(302);
    const authorize = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const back = new URL(authorize.headers.get('location')!);
    await svc.database.db
      .update(memberships)
      .set({ role: 'member' })
      .where(and(eq(memberships.tenantId, other.tenantId), eq(memberships.userId, userId)));
    const res = await svc.api('GET', `${back.pathname}${back.search}`);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
    const rows = await svc.database.db.select().from(integrations).where(eq(integrations.tenantId, other.tenantId));
    expect(rows).toEqual([]);
  });

  it('answers 409 for a provider without a client and 404 for one not in the catalog', async () => {
    const gitlab = await startConnect('gitlab', tenant.admin);
    expect(gitlab.status).toBe(409);
    expect(((await gitlab.json()) as { error: string }).error).toBe('integration_not_configured');
    const unknown = await svc.api('GET', '/v1/integrations/connect/myspace', { token: tenant.admin });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('integration_not_found');
    const post = await svc.api('POST', '/v1/integrations/connect/github', { token: tenant.admin, body: {} });
    expect(post.status).toBe(400);
    expect(post.body.message).toContain('connects through OAuth');
  });

  it('members list but cannot connect or disconnect; another tenant sees none of it', async () => {
    expect((await startConnect('github', tenant.member)).status).toBe(403);
    const post = await svc.api('POST', '/v1/integrations/connect/datadog', { token: tenant.member, body: {} });
    expect(post.status).toBe(403);
    expect((await svc.api('DELETE', `/v1/integrations/${githubId}`, { token: tenant.member })).status).toBe(403);

    const theirs = await svc.api('GET', '/v1/integrations', { token: other.admin });
    expect(theirs.body).toEqual({ items: [], total: 0 });
    const cross = await svc.api('DELETE', `/v1/integrations/${githubId}`, { token: other.admin });
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('integration_not_found');
    expect((await rowOf(githubId)).status).toBe('connected');
  });

  it('disconnecting revokes the grant at the provider and erases the credentials', async () => {
    const [token] = [...github.validTokens];
    const res = await svc.api('DELETE', `/v1/integrations/${githubId}`, { token: tenant.admin });
    expect(res.status).toBe(204);
    const revoke = github.received.find(
      (r) => r.method === 'DELETE' && r.path === `/applications/${github.clientId}/grant`,
    );
    expect(JSON.parse(revoke!.body)).toEqual({ access_token: token });
    expect(github.validTokens.has(token!)).toBe(false);
    expect(await rowOf(githubId)).toMatchObject({ status: 'disconnected', credentials: null });
    const list = await svc.api('GET', '/v1/integrations', { token: tenant.admin });
    expect(list.body.items.map((i: { provider: string }) => i.provider)).not.toContain('github');
    const again = await svc.api('DELETE', `/v1/integrations/${githubId}`, { token: tenant.admin });
    expect(again.status).toBe(404);
    const [audit] = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, githubId), eq(auditLog.action, 'integration.disconnected')));
    expect(audit!.details).toMatchObject({ provider: 'github', revokedAtProvider: true });
  });
});

describe('api_key providers', () => {
  it('GET connect says what to POST', async () => {
    const res = await svc.api('GET', '/v1/integrations/connect/datadog', { token: tenant.admin });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider: 'datadog',
      authType: 'api_key',
      method: 'POST',
      connectUrl: `${PUBLIC}/v1/integrations/connect/datadog`,
      requiredFields: ['apiKey', 'applicationKey', 'site'],
    });
    await expectConformsToDocument(svc, '/v1/integrations/connect/{provider}', 'get', 200, res.body);
  });

  it('connects Datadog with a key its validate endpoint accepts, and refuses one it does not', async () => {
    const appKey = 'b2a6e1c4d7f80a9e3c5b1d7f2e4a6c8b0d9e1f3a';
    const bad = await svc.api('POST', '/v1/integrations/connect/datadog', {
      token: tenant.admin,
      body: { apiKey: 'dd-refused-0123456789', applicationKey: appKey, site: 'datadoghq.eu' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('integration_rejected');
    expect(bad.body.message).toContain('Forbidden');
    expect(JSON.stringify(bad.body)).not.toContain('dd-refused-0123456789');

    const good = await svc.api('POST', '/v1/integrations/connect/datadog', {
      token: tenant.admin,
      body: { apiKey: datadog.goodKey, applicationKey: appKey, site: 'datadoghq.eu' },
    });
    expect(good.status).toBe(201);
    expect(good.body).toMatchObject({ provider: 'datadog', status: 'connected', scopes: [] });
    expect(datadog.hits('/api/v1/validate').at(-1)!.headers['dd-api-key']).toBe(datadog.goodKey);
    const row = await rowOf(good.body.integrationId);
    expect(row.credentials).not.toContain(datadog.goodKey);
    expect(row.credentials).not.toContain(appKey);
    expect(JSON.stringify(good.body)).not.toContain(datadog.goodKey);
    await expectConformsToDocument(svc, '/v1/integrations/connect/{provider}', 'post', 201, good.body);
  });

  it('connects Opsgenie; a refused GenieKey is 400 with the provider reason', async () => {
    const bad = await svc.api('POST', '/v1/integrations/connect/opsgenie', {
      token: tenant.admin,
      body: { apiKey: '00000000-dead-beef-0000-000000000000', region: 'eu' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error: 'integration_rejected',
      message: expect.stringContaining('Could not authenticate'),
    });
    const good = await svc.api('POST', '/v1/integrations/connect/opsgenie', {
      token: tenant.admin,
      body: { apiKey: opsgenie.goodKey, region: 'eu' },
    });
    expect(good.status).toBe(201);
    expect(opsgenie.hits('/v2/account').at(-1)!.headers.authorization).toBe(`GenieKey ${opsgenie.goodKey}`);
  });

  it('refuses unknown, missing and malformed fields before any call', async () => {
    const before = datadog.received.length;
    const unknown = await svc.api('POST', '/v1/integrations/connect/datadog', {
      token: tenant.admin,
      body: { apiKey: datadog.goodKey, applicationKey: 'x'.repeat(40), site: 'datadoghq.com', extra: 'no' },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.details).toContainEqual({ path: 'extra', message: expect.stringContaining('unknown field') });
    const missing = await svc.api('POST', '/v1/integrations/connect/datadog', {
      token: tenant.admin,
      body: { apiKey: datadog.goodKey, site: 'example.com' },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([
      { path: 'applicationKey', message: 'required (a non-empty string)' },
      { path: 'site', message: expect.stringContaining('must be one of') },
    ]);
    const private10 = await svc.api('POST', '/v1/integrations/connect/grafana', {
      token: tenant.admin,
      body: { baseUrl: 'https://10.0.0.1:3000', serviceAccountToken: 'glsa_0123456789abcdef' },
    });
    expect(private10.status).toBe(400);
    expect(private10.body.details).toEqual([{ path: 'baseUrl', message: expect.stringContaining('private') }]);
    const plain = await svc.api('POST', '/v1/integrations/connect/grafana', {
      token: tenant.admin,
      body: { baseUrl: 'http://grafana.example.com', serviceAccountToken: 'glsa_0123456789abcdef' },
    });
    expect(plain.status).toBe(400);
    expect(plain.body.details[0].path).toBe('baseUrl');
    expect(datadog.received.length).toBe(before);
  });
});

describe('webhook_only providers', () => {
  it('returns the webhook URL and a working key, which disconnecting revokes', async () => {
    const res = await svc.api('POST', '/v1/integrations/connect/alertmanager', { token: tenant.admin });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ provider: 'alertmanager', status: 'connected' });
    expect(res.body.webhook.url).toBe(`${PUBLIC}/v1/webhooks/${tenant.tenantId}/alertmanager`);
    expect(res.body.webhook.key).toMatch(/^flo_/);
    expect(res.body.webhook.signingSecret).toMatch(/^whsec_/);
    await expectConformsToDocument(svc, '/v1/integrations/connect/{provider}', 'post', 201, res.body);
    const delivered = await postWebhook(svc, tenant.tenantId, 'alertmanager', fixture('alertmanager-firing.json'), {
      key: res.body.webhook.key,
      sign: res.body.webhook.signingSecret,
    });
    expect(delivered.status).toBe(202);
    const list = await svc.api('GET', '/v1/integrations', { token: tenant.member });
    expect(JSON.stringify(list.body)).not.toContain(res.body.webhook.key);
    expect(JSON.stringify(list.body)).not.toContain(res.body.webhook.signingSecret);

    expect(
      (await svc.api('DELETE', `/v1/integrations/${res.body.integrationId}`, { token: tenant.admin })).status,
    ).toBe(204);
    const [key] = await svc.database.db.select().from(apiKeys).where(eq(apiKeys.id, res.body.webhook.keyId));
    expect(key!.revokedAt).not.toBeNull();
    const refused = await postWebhook(svc, tenant.tenantId, 'alertmanager', fixture('alertmanager-firing.json'), {
      key: res.body.webhook.key,
    });
    expect(refused.status).toBe(401);
  });
});
