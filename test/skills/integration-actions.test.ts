/**
 * Integration skills act with the tenant's connection, through the worker (the skill test route
 * runs the same activity agents use): without a connection they fail with the connect link;
 * with one they call the provider's API with the stored token, refreshing it near its expiry.
 */
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrations } from '../../src/db/schema/identity.js';
import { refreshDueConnections } from '../../src/integrations/connection.js';
import { startIntegrationRefresher } from '../../src/integrations/refresher.js';
import { skillInvocations } from '../../src/db/schema/skills.js';
import {
  connectThroughBrowser,
  startProviderServer,
  type ProviderServer,
} from '../helpers/integration-provider-server.js';
import { concludedIncident, proposedRemediation } from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

const PUBLIC = 'http://api.test';
let svc: TestService;
let github: ProviderServer;
let slack: ProviderServer;
let pagerduty: ProviderServer;
let tenant: { tenantId: string; admin: string; member: string };

const client = (p: ProviderServer) => ({ clientId: p.clientId, clientSecret: p.clientSecret, url: p.url });

beforeAll(async () => {
  [github, slack, pagerduty] = await Promise.all([
    startProviderServer('github'),
    startProviderServer('slack'),
    startProviderServer('pagerduty'),
  ]);
  // PagerDuty's tokens here live 2 minutes: within the 5-minute margin, so each use refreshes.
  pagerduty.expiresIn = 120;
  svc = await startTestService({
    publicBaseUrl: PUBLIC,
    skills: { limits: { timeoutMs: 2000, retryBaseDelayMs: 10 } },
    identity: {
      integrationClients: { github: client(github), slack: client(slack), pagerduty: client(pagerduty) },
    },
  });
  tenant = await svc.newTenant();
});
afterAll(async () => {
  await svc?.stop();
  await Promise.all([github, slack, pagerduty].map((p) => p?.close()));
});

async function createSkill(name: string, action: string): Promise<string> {
  const res = await svc.api('POST', `/api/v1/tenants/${tenant.tenantId}/skills`, {
    token: tenant.admin,
    body: { name, description: `Runs ${action} with the connected account`, type: 'integration', config: { action } },
  });
  expect(res.status).toBe(201);
  return res.body.skillId as string;
}

const runSkill = (skillId: string, input: unknown) =>
  svc.api('POST', `/api/v1/tenants/${tenant.tenantId}/skills/${skillId}/test`, {
    token: tenant.admin,
    body: { input },
  });

const connectionOf = async (provider: string) =>
  (
    await svc.database.db
      .select()
      .from(integrations)
      .where(and(eq(integrations.tenantId, tenant.tenantId), eq(integrations.provider, provider)))
  )[0]!;

const bearerOf = (p: ProviderServer, path: string) => p.hits(path).at(-1)?.headers.authorization;

describe('integration skills', () => {
  let addNote: string;
  let createIssue: string;

  it('fail with the connect link while the provider is not connected', async () => {
    addNote = await createSkill('add_pagerduty_note', 'pagerduty.add_note');
    const res = await runSkill(addNote, { incidentId: 'PT4KHLK', content: 'Rolled back checkout-api to 4f2a9c1' });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(false);
    expect(res.body.error).toMatchObject({
      code: 'integration_not_connected',
      message: `connect pagerduty at ${PUBLIC}/v1/integrations/connect/pagerduty`,
    });
    const [recorded] = await svc.database.db
      .select()
      .from(skillInvocations)
      .where(eq(skillInvocations.id, res.body.invocationId));
    expect(recorded).toMatchObject({ status: 'failed' });
    expect(pagerduty.hits('/incidents/PT4KHLK/notes')).toHaveLength(0);
  });

  it('github.create_issue calls GitHub with the stored token and records the use', async () => {
    const { res } = await connectThroughBrowser(svc, 'github', tenant.admin);
    expect(res.status).toBe(200);
    const [token] = [...github.validTokens];
    createIssue = await createSkill('open_github_issue', 'github.create_issue');
    const run = await runSkill(createIssue, {
      repository: 'acme/checkout-api',
      title: 'Checkout 502s after deploy 4f2a9c1',
      body: 'Opened by the incident service.',
    });
    expect(run.body).toMatchObject({
      ok: true,
      output: { number: 1347, url: 'https://github.com/acme/checkout-api/issues/1347', id: 1 },
    });
    const sent = github.hits('/repos/acme/checkout-api/issues').at(-1)!;
    expect(sent.headers.authorization).toBe(`Bearer ${token}`);
    expect(sent.headers['x-github-api-version']).toBe('2022-11-28');
    expect(JSON.parse(sent.body)).toEqual({
      title: 'Checkout 502s after deploy 4f2a9c1',
      body: 'Opened by the incident service.',
    });
    expect((await connectionOf('github')).lastUsedAt).not.toBeNull();
    expect(JSON.stringify(run.body)).not.toContain(token!);
  });

  it('github.api_request stays under the API base', async () => {
    const generic = await createSkill('github_request', 'github.api_request');
    const escape = await runSkill(generic, { method: 'GET', path: '/repos/../../admin' });
    expect(escape.body).toMatchObject({ ok: false, error: { code: 'invalid_input' } });
    const encoded = await runSkill(generic, { method: 'GET', path: '/repos/%2e%2e/x' });
    expect(encoded.body).toMatchObject({ ok: false, error: { code: 'invalid_input' } });
    const absolute = await runSkill(generic, { method: 'GET', path: '//evil.example/x' });
    expect(absolute.body).toMatchObject({ ok: false, error: { code: 'invalid_input' } });
    const ok = await runSkill(generic, {
      method: 'POST',
      path: '/repos/acme/checkout-api/issues',
      body: { title: 'From api_request' },
    });
    expect(ok.body).toMatchObject({ ok: true, output: { status: 201, body: { title: 'From api_request' } } });
  });

  it('slack.post_message posts with the bot token', async () => {
    expect((await connectThroughBrowser(svc, 'slack', tenant.admin)).res.status).toBe(200);
    const [token] = [...slack.validTokens];
    const post = await createSkill('post_to_slack', 'slack.post_message');
    const run = await runSkill(post, { channel: 'C024BE91L', text: 'Investigation finished: bad deploy 4f2a9c1' });
    expect(run.body).toMatchObject({ ok: true, output: { channel: 'C024BE91L', ts: '1503435956.000247' } });
    expect(bearerOf(slack, '/api/chat.postMessage')).toBe(`Bearer ${token}`);
  });

  it("a remediation step of an integration skill posts with the connection, its channel from the schema's default", async () => {
    const created = await svc.api('POST', `/api/v1/tenants/${tenant.tenantId}/skills`, {
      token: tenant.admin,
      body: {
        name: 'post_slack_update',
        description: 'Posts an update to the incident channel in Slack',
        type: 'integration',
        config: { action: 'slack.post_message' },
        inputSchema: { type: 'object', properties: { channel: { type: 'string', default: 'C024BE91L' } } },
      },
    });
    expect(created.status).toBe(201);
    const incidentId = await concludedIncident(
      svc,
      tenant,
      { title: 'Checkout errors', description: 'Checkout answers 502 errors since 03:10', service: 'checkout-api' },
      ['Post a Slack update on checkout-api for the support team'],
    );
    const { acts, proposal, remediation } = await proposedRemediation(
      svc,
      tenant.tenantId,
      incidentId,
      'integration-step',
    );
    expect(remediation.plan[0]).toMatchObject({ kind: 'integration', skillId: created.body.skillId });
    const outcome = await acts.executeRemediationStep({
      incidentId,
      tenantId: tenant.tenantId,
      remediationId: proposal.remediationId,
      index: 0,
      workflowId: incidentId,
    });
    expect(outcome).toMatchObject({ ok: true, output: { output: { channel: 'C024BE91L', ts: '1503435956.000247' } } });
    expect(JSON.parse(slack.hits('/api/chat.postMessage').at(-1)!.body)).toEqual({
      channel: 'C024BE91L',
      text: 'Post a Slack update on checkout-api for the support team',
    });
  });

  it('an access token near its expiry is refreshed once on use, then used', async () => {
    expect((await connectThroughBrowser(svc, 'pagerduty', tenant.admin)).res.status).toBe(200);
    const before = await connectionOf('pagerduty');
    const [oldToken] = [...pagerduty.validTokens];
    const run = await runSkill(addNote, { incidentId: 'PT4KHLK', content: 'Rolled back checkout-api to 4f2a9c1' });
    expect(run.body).toMatchObject({ ok: true, output: { noteId: 'PWL7QXS' } });
    const grants = pagerduty.hits('/oauth/token').map((r) => new URLSearchParams(r.body).get('grant_type'));
    expect(grants).toEqual(['authorization_code', 'refresh_token']);
    const used = bearerOf(pagerduty, '/incidents/PT4KHLK/notes');
    expect(used).not.toBe(`Bearer ${oldToken}`);
    expect(pagerduty.validTokens.has(used!.slice('Bearer '.length))).toBe(true);
    const after = await connectionOf('pagerduty');
    expect(after.status).toBe('connected');
    expect(after.credentials).not.toBe(before.credentials);
    expect(after.expiresAt!.getTime()).toBeGreaterThan(before.expiresAt!.getTime());
    expect(JSON.parse(pagerduty.hits('/incidents/PT4KHLK/notes').at(-1)!.body)).toEqual({
      note: { content: 'Rolled back checkout-api to 4f2a9c1' },
    });
  });

  it('two uses at once refresh once: the second waits on the row lock and takes the new token', async () => {
    pagerduty.refreshDelayMs = 400;
    const before = pagerduty.hits('/oauth/token').length;
    const runs = await Promise.all([
      runSkill(addNote, { incidentId: 'PT4KHLK', content: 'First of two' }),
      runSkill(addNote, { incidentId: 'PT4KHLK', content: 'Second of two' }),
    ]);
    pagerduty.refreshDelayMs = 0;
    expect(runs.map((r) => r.body.ok)).toEqual([true, true]);
    const grants = pagerduty.hits('/oauth/token').slice(before);
    expect(grants.map((r) => new URLSearchParams(r.body).get('grant_type'))).toEqual(['refresh_token']);
    const used = pagerduty
      .hits('/incidents/PT4KHLK/notes')
      .slice(-2)
      .map((r) => r.headers.authorization);
    expect(used[0]).toBe(used[1]);
    expect((await connectionOf('pagerduty')).status).toBe('connected');
  });

  it('the housekeeping pass refreshes a token near its expiry without a use', async () => {
    const before = await connectionOf('pagerduty');
    const grants = pagerduty.hits('/oauth/token').length;
    const runtime = { ...svc.skills, ...svc.skills.integrations! };
    expect(await refreshDueConnections(svc.database.db, runtime, new Date())).toEqual({ refreshed: 1, failed: 0 });
    expect(pagerduty.hits('/oauth/token')).toHaveLength(grants + 1);
    const after = await connectionOf('pagerduty');
    expect(after.expiresAt!.getTime()).toBeGreaterThan(before.expiresAt!.getTime());
    expect(after.lastUsedAt).toEqual(before.lastUsedAt);
    // The worker's loop runs the same pass.
    const refresher = startIntegrationRefresher(
      { db: svc.database.db, runtime, logger: { info: () => undefined, warn: () => undefined } },
      { intervalMs: 50 },
    );
    await eventually(async () => pagerduty.hits('/oauth/token').length >= grants + 2, 5000);
    await refresher.stop();
    expect((await connectionOf('pagerduty')).status).toBe('connected');
  });

  it('a refused refresh marks the connection error, and later uses say so', async () => {
    pagerduty.refreshTokens.clear();
    const run = await runSkill(addNote, { incidentId: 'PT4KHLK', content: 'Second note' });
    expect(run.body.ok).toBe(false);
    expect(run.body.error.code).toBe('integration_not_connected');
    expect(run.body.error.message).toContain('invalid_grant');
    expect(run.body.error.message).toContain(`connect pagerduty at ${PUBLIC}/v1/integrations/connect/pagerduty`);
    const row = await connectionOf('pagerduty');
    expect(row.status).toBe('error');
    expect(row.statusReason).toContain('token refresh refused');
    const list = await svc.api('GET', '/v1/integrations', { token: tenant.member });
    expect(list.body.items.find((i: { provider: string }) => i.provider === 'pagerduty').status).toBe('error');
  });

  it('a token the provider refuses (401) marks the connection error', async () => {
    github.validTokens.clear();
    const run = await runSkill(createIssue, { repository: 'acme/checkout-api', title: 'Another' });
    expect(run.body).toMatchObject({
      ok: false,
      error: { code: 'http_error', message: 'github answered 401: Bad credentials' },
    });
    expect((await connectionOf('github')).status).toBe('error');
    const next = await runSkill(createIssue, { repository: 'acme/checkout-api', title: 'Again' });
    expect(next.body.error.code).toBe('integration_not_connected');
  });
});
