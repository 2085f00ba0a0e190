import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { usagePeriod } from '../../src/domain/plans.js';
import { runCli } from '../helpers/cli.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant({ plan: 'plan_pro', name: 'Acme Payments', grouping: true });
});
afterAll(() => svc?.stop());

describe('GET /v1/tenants/{tenantId}', () => {
  it("returns the caller's own tenant with default settings", async () => {
    const res = await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: tenant.member });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      tenantId: tenant.tenantId,
      name: 'Acme Payments',
      slug: 'acme-payments',
      status: 'active',
      plan: 'plan_pro',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      settings: {
        cloudRoleArn: '',
        cloudExternalId: '',
        cloudRegion: '',
        autoRemediation: false,
        requireWebhookSignature: false,
        autoResolve: false,
        approvalTimeoutMinutes: 60,
        allowHttpSkills: false,
        correlationWindowMinutes: 10,
      },
    });
  });

  it("answers 404 not_found for another tenant's id", async () => {
    const other = await svc.newTenant();
    const res = await svc.api('GET', `/v1/tenants/${other.tenantId}`, { token: tenant.admin });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    const patch = await svc.api('PATCH', `/v1/tenants/${other.tenantId}`, {
      token: tenant.admin,
      body: { name: 'stolen' },
    });
    expect(patch.status).toBe(404);
    const [row] = await svc.database.db.select().from(tenants).where(eq(tenants.id, other.tenantId));
    expect(row!.name).not.toBe('stolen');
  });
});

describe('PATCH /v1/tenants/{tenantId}', () => {
  it('merges settings, keeps omitted fields, and audits which fields changed without their values', async () => {
    const first = await svc.api('PATCH', `/v1/tenants/${tenant.tenantId}`, {
      token: tenant.admin,
      body: {
        settings: { cloudRoleArn: 'arn:cloud:iam::123456789012:role/incident-reader', cloudRegion: 'eu-west-1' },
      },
    });
    expect(first.status).toBe(200);
    const second = await svc.api('PATCH', `/v1/tenants/${tenant.tenantId}`, {
      token: tenant.admin,
      body: { name: 'Acme Payments EU', settings: { autoRemediation: true, cloudExternalId: 'ext-42' } },
    });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({
      name: 'Acme Payments EU',
      slug: 'acme-payments',
      settings: {
        cloudRoleArn: 'arn:cloud:iam::123456789012:role/incident-reader',
        cloudExternalId: 'ext-42',
        cloudRegion: 'eu-west-1',
        autoRemediation: true,
      },
    });
    const cleared = await svc.api('PATCH', `/v1/tenants/${tenant.tenantId}`, {
      token: tenant.admin,
      body: { settings: { cloudRegion: null } },
    });
    expect(cleared.body.settings).toMatchObject({ cloudRegion: '', autoRemediation: true });
    const again = await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: tenant.member });
    expect(again.body).toEqual(cleared.body);
    // A read's settings sent back as they are: an unset one ("") stays unset, stored as not set.
    const echoed = await svc.api('PATCH', `/v1/tenants/${tenant.tenantId}`, {
      token: tenant.admin,
      body: { settings: { ...again.body.settings, cloudExternalId: '' } },
    });
    expect(echoed.status).toBe(200);
    expect(echoed.body.settings).toMatchObject({
      cloudRoleArn: 'arn:cloud:iam::123456789012:role/incident-reader',
      cloudExternalId: '',
      cloudRegion: '',
    });
    const [stored] = await svc.database.db.select().from(tenants).where(eq(tenants.id, tenant.tenantId));
    expect(stored!.settings).toMatchObject({ cloudExternalId: null, cloudRegion: null });

    const audit = await svc.database.db
      .select()
      .from(auditLog)
      .where(eq(auditLog.action, 'tenant.updated'))
      .orderBy(auditLog.seq);
    const mine = audit.filter((a) => a.tenantId === tenant.tenantId);
    expect(mine.map((a) => a.details)).toEqual([
      { name: false, settings: ['cloudRoleArn', 'cloudRegion'] },
      { name: true, settings: ['cloudExternalId', 'autoRemediation'] },
      { name: false, settings: ['cloudRegion'] },
      {
        name: false,
        settings: [
          'cloudRoleArn',
          'cloudExternalId',
          'cloudRegion',
          'autoRemediation',
          'requireWebhookSignature',
          'autoResolve',
          'approvalTimeoutMinutes',
          'allowHttpSkills',
          'correlationWindowMinutes',
        ],
      },
    ]);
    for (const value of ['ext-42', 'incident-reader', 'eu-west-1', 'Acme Payments EU'])
      expect(JSON.stringify(mine)).not.toContain(value);
  });

  it.each([
    [{ name: '' }],
    [{ name: 123 }],
    [{ settings: { autoRemediation: 'yes' } }],
    [{ settings: { unknownSetting: true } }],
    [{ settings: { cloudRegion: 'Not A Region!' } }],
    [{ settings: { cloudRoleArn: '   ' } }],
    [{ plan: 'plan_enterprise' }],
    [{ settings: 'none' }],
  ])('rejects %j with 400 validation_error', async (body) => {
    const res = await svc.api('PATCH', `/v1/tenants/${tenant.tenantId}`, { token: tenant.admin, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
  });

  it('is admin only', async () => {
    const res = await svc.api('PATCH', `/v1/tenants/${tenant.tenantId}`, { token: tenant.member, body: { name: 'x' } });
    expect(res.status).toBe(403);
  });
});

describe('public catalogue endpoints', () => {
  it('publishes the four plans exactly as the interface lists them', async () => {
    const res = await svc.api('GET', '/v1/billing/plans');
    expect(res.status).toBe(200);
    expect(res.body.plans).toEqual([
      {
        planId: 'plan_starter',
        name: 'Starter',
        priceMonthlyUsd: 99,
        features: {
          investigationsPerMonth: 15,
          eventsPerMonth: 500,
          apiRateLimitPerMinute: 100,
          customSkills: false,
          relayAccess: false,
        },
      },
      {
        planId: 'plan_pro',
        name: 'Pro',
        priceMonthlyUsd: 349,
        features: {
          investigationsPerMonth: 60,
          eventsPerMonth: 3000,
          apiRateLimitPerMinute: 500,
          customSkills: true,
          relayAccess: true,
        },
      },
      {
        planId: 'plan_business',
        name: 'Business',
        priceMonthlyUsd: 899,
        features: {
          investigationsPerMonth: 200,
          eventsPerMonth: 10000,
          apiRateLimitPerMinute: 2000,
          customSkills: true,
          relayAccess: true,
        },
      },
      {
        planId: 'plan_enterprise',
        name: 'Enterprise',
        priceMonthlyUsd: null,
        features: {
          investigationsPerMonth: 'custom',
          eventsPerMonth: 'custom',
          apiRateLimitPerMinute: 2000,
          customSkills: true,
          relayAccess: true,
        },
      },
    ]);
  });

  it('lists the integration catalog with connect URLs, filtered by category', async () => {
    const all = await svc.api('GET', '/v1/integrations/catalog');
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(all.body.items.length);
    expect(all.body.total).toBeGreaterThanOrEqual(15);
    const github = all.body.items.find((i: { provider: string }) => i.provider === 'github');
    expect(github).toMatchObject({
      category: 'code',
      authType: 'oauth2',
      connectUrl: 'http://api.test/v1/integrations/connect/github',
    });
    expect(github.scopes.length).toBeGreaterThan(0);
    const cloud = await svc.api('GET', '/v1/integrations/catalog?category=cloud');
    expect(cloud.body.items.length).toBeGreaterThanOrEqual(3);
    expect(cloud.body.items.every((i: { category: string }) => i.category === 'cloud')).toBe(true);
    const bad = await svc.api('GET', '/v1/integrations/catalog?category=games');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('validation_error');
  });
});

describe('documents, unknown routes and limits', () => {
  it('serves the OpenAPI document generated from the validation schemas, and a docs page', async () => {
    const doc = await svc.api('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/incidents/chat',
        '/v1/incidents',
        '/v1/incidents/{incidentId}',
        '/v1/tenants/{tenantId}',
        '/health/detailed',
      ]),
    );
    const create = doc.body.components.schemas.CreateIncident;
    expect(create.properties.description).toMatchObject({ minLength: 10, maxLength: 4000 });
    const docs = await svc.api('GET', '/docs');
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-type')).toContain('text/html');
    expect(docs.body).toContain('/openapi.json');
  });

  it('declares what every operation may answer, and real answers match the declared schemas', async () => {
    const doc = (await svc.api('GET', '/openapi.json')).body as {
      paths: Record<
        string,
        Record<
          string,
          {
            parameters?: Array<{ in: string; name: string; schema?: { enum?: string[] } }>;
            requestBody?: unknown;
            responses: Record<string, any>;
          }
        >
      >;
      components: { schemas: Record<string, any>; headers: Record<string, unknown> };
    };
    let operations = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const name = `${method} ${path}`;
        operations++;
        if (operation.requestBody) expect(operation.responses['413'], name).toBeDefined();
        if (operation.parameters?.some((p) => p.in === 'path')) expect(operation.responses['400'], name).toBeDefined();
        if (path.startsWith('/health')) {
          expect(operation.responses['429'], name).toBeUndefined();
          continue;
        }
        expect(operation.responses['429'], name).toBeDefined();
        expect(operation.responses['503'], name).toBeDefined();
        for (const [status, response] of Object.entries(operation.responses)) {
          expect(Object.keys(response.headers ?? {}), `${name} ${status}`).toEqual(
            expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']),
          );
          if (status === '429' || status === '503')
            expect(response.headers['Retry-After'], `${name} ${status}`).toBeDefined();
        }
      }
    }
    expect(operations).toBeGreaterThanOrEqual(60);
    expect(Object.keys(doc.components.headers)).toEqual(
      expect.arrayContaining(['RateLimitLimit', 'RateLimitRemaining', 'RateLimitReset', 'RetryAfter']),
    );
    const webhook = doc.paths['/v1/webhooks/{tenantId}/{provider}']!.post!;
    expect(webhook.requestBody).toBeDefined();
    expect(webhook.parameters!.find((p) => p.name === 'provider')!.schema!.enum).toEqual([
      'alertmanager',
      'grafana',
      'datadog',
      'sentry',
      'github',
      'generic',
      'launchdarkly',
      'unleash',
      'flagsmith',
      'argocd',
      'flux',
    ]);
    expect(doc.components.schemas.ChatMessageRequest.properties.message.minLength).toBe(1);
    expect(doc.components.schemas.UpdateRunbook.minProperties).toBe(1);

    // Real answers against the document, with a JSON Schema 2020-12 validator (OpenAPI 3.1's).
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema({ $id: 'https://openapi.test/doc', components: doc.components });
    const validate = (path: string, method: string, status: number, body: unknown) => {
      const schema = doc.paths[path]![method]!.responses[String(status)].content['application/json'].schema;
      const check = ajv.compile(
        JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"https://openapi.test/doc#/components/')),
      );
      expect(check(body) ? [] : check.errors, `${method} ${path} ${status}`).toEqual([]);
    };
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const created = await svc.api('POST', '/v1/audit/export', {
      token: tenant.admin,
      body: { format: 'ndjson', from, to: new Date().toISOString() },
    });
    expect(created.status).toBe(202);
    validate('/v1/audit/export', 'post', 202, created.body);
    const poll = await svc.api('GET', `/v1/audit/export/${created.body.exportId}`, { token: tenant.admin });
    expect(poll.status).toBe(200);
    expect(poll.body.destination).toBeNull(); // `allOf` with the destination's $ref refused this null
    validate('/v1/audit/export/{exportId}', 'get', 200, poll.body);
    const incident = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'Schema check', description: 'An incident to read back' },
    });
    validate('/v1/incidents/chat', 'post', 201, incident.body);
    const read = await svc.api('GET', `/v1/incidents/${incident.body.incidentId}`, { token: tenant.member });
    validate('/v1/incidents/{incidentId}', 'get', 200, read.body);
    expect(read.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
    const tooLong = await svc.api('GET', `/v1/incidents/${'a'.repeat(65)}`, { token: tenant.member });
    expect(tooLong.status).toBe(400);
    validate('/v1/incidents/{incidentId}', 'get', 400, tooLong.body);
    const empty = await svc.api('POST', '/v1/memory/chat', { token: tenant.member, body: { message: '' } });
    expect(empty.status).toBe(400);
    validate('/v1/memory/chat', 'post', 400, empty.body);
  });

  it('answers unknown routes with 404 in the error shape', async () => {
    const anonymous = await svc.api('GET', '/definitely/not/here');
    expect(anonymous.status).toBe(404);
    expect(anonymous.body).toEqual({ error: 'not_found', message: expect.any(String) });
    const authed = await svc.api('DELETE', '/v1/incidents', { token: tenant.admin });
    expect(authed.status).toBe(404);
    expect(authed.body.error).toBe('not_found');
  });

  /**
   * POST /v1/incidents/chat over node:http, body written chunk by chunk, each on a fresh
   * connection (the server closes the one of a refused upload). node:http reads a response that
   * arrives before the upload ends, as the server answers early. Without a Content-Length
   * header the body goes chunked.
   */
  function postChat(
    chunks: string[],
    headers: Record<string, string | number> = {},
  ): Promise<{ status: number; body: string; chunked: boolean }> {
    return new Promise((resolve, reject) => {
      const req = request(
        `${svc.baseUrl}/v1/incidents/chat`,
        {
          method: 'POST',
          agent: false,
          headers: { authorization: `Bearer ${tenant.member}`, 'content-type': 'application/json', ...headers },
        },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              body: text,
              chunked: req.getHeader('content-length') === undefined,
            }),
          );
        },
      );
      req.on('error', reject);
      for (const chunk of chunks) req.write(chunk);
      req.end();
    });
  }
  const tooLarge = { error: 'payload_too_large', message: 'The request body exceeds 1 MiB' };

  it('refuses bodies over 1 MiB with 413', async () => {
    const body = JSON.stringify({ title: 'x', description: 'y'.repeat(1024 * 1024) });
    const res = await postChat([body], { 'content-length': Buffer.byteLength(body) });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual(tooLarge);
    const justUnder = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      // Padded with white space: an unknown padding field is refused (decision 250).
      rawBody: `{"title":"x","description":"within bounds"${' '.repeat(1000 * 1000)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(justUnder.status).toBe(201);
  });

  it('refuses a chunked body (no Content-Length) once it passes 1 MiB, with 413', async () => {
    // 1.25 MiB in 64 KiB chunks.
    const res = await postChat([
      '{"title":"x","description":"',
      ...Array.from({ length: 20 }, () => 'y'.repeat(64 * 1024)),
      '"}',
    ]);
    expect(res.chunked).toBe(true);
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual(tooLarge);
    // A chunked body within bounds reaches the route whole.
    const small = await postChat(['{"title":"chunked upload",', '"description":"sent in two chunks"}']);
    expect(small.chunked).toBe(true);
    expect(small.status).toBe(201);
    expect(JSON.parse(small.body)).toMatchObject({ title: 'chunked upload' });
  });

  it("answers with the service's own request id, whatever id the caller sent (decision 0248)", async () => {
    const mine = await svc.api('GET', '/health', { headers: { 'x-request-id': 'trace-abc-123' } });
    expect(mine.headers.get('x-request-id')).toMatch(/^req_/);
    const made = await svc.api('GET', '/health', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(made.headers.get('x-request-id')).toMatch(/^req_/);
  });
});

describe('GET /v1/tenants/{tenantId}/usage', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'iis-cli-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const cli = async (args: string[]) => {
    const res = await runCli(args, { DATA_DIR: dataDir, DATABASE_URL: svc.databaseUrl });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    return JSON.parse(res.stdout);
  };
  const enterprise = async (flags: string[] = []) => {
    const { tenantId } = await cli(['tenant', 'create', '--name', 'Big Corp', '--plan', 'plan_enterprise', ...flags]);
    return { tenantId: tenantId as string, admin: svc.token(tenantId, 'admin'), member: svc.token(tenantId, 'member') };
  };
  const usage = async (t: { tenantId: string; member: string }) => {
    const res = await svc.api('GET', `/v1/tenants/${t.tenantId}/usage`, { token: t.member });
    expect(res.status).toBe(200);
    return res.body;
  };
  const incident = { title: 'Checkout errors', description: 'Checkout answers 502 errors since the deploy' };
  const period = usagePeriod(new Date());

  it("shows a plan's published quotas, this month's use and what is left, all integers", async () => {
    const pro = await svc.newTenant({ plan: 'plan_pro' });
    expect((await svc.api('POST', '/v1/incidents/chat', { token: pro.member, body: incident })).status).toBe(201);
    expect(await usage(pro)).toEqual({
      tenantId: pro.tenantId,
      plan: 'plan_pro',
      period,
      investigations: { limit: 60, used: 0, remaining: 60 },
      events: { limit: 3000, used: 1, remaining: 2999 },
      chatMessages: { limit: 1000, used: 0, remaining: 1000 },
    });
  });

  it('an enterprise tenant shows the quotas its creation flags set, or the documented defaults', async () => {
    const custom = await enterprise([
      '--investigations-per-month',
      '4000',
      '--events-per-month',
      '300000',
      '--chat-messages-per-month',
      '900',
    ]);
    expect(await usage(custom)).toMatchObject({
      plan: 'plan_enterprise',
      investigations: { limit: 4000, used: 0, remaining: 4000 },
      events: { limit: 300_000, used: 0, remaining: 300_000 },
      chatMessages: { limit: 900, used: 0, remaining: 900 },
    });
    const created = await svc.api('POST', '/v1/incidents/chat', { token: custom.member, body: incident });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ investigationsRemaining: 4000, eventsRemaining: 299_999 });

    const byDefault = await enterprise();
    expect(await usage(byDefault)).toMatchObject({
      investigations: { limit: 2000, remaining: 2000 },
      events: { limit: 1_000_000, remaining: 1_000_000 },
      chatMessages: { limit: 20_000, remaining: 20_000 },
    });
    const [row] = await svc.database.db.select().from(tenants).where(eq(tenants.id, byDefault.tenantId));
    expect(row!.settings.quotas).toBeUndefined(); // the default is the documented one, not a stored copy
  });

  it("enforces an enterprise tenant's custom quotas at their number, and an operator's change at once", async () => {
    const small = await enterprise(['--investigations-per-month', '1', '--events-per-month', '2']);
    const first = await svc.api('POST', '/v1/incidents/chat', { token: small.member, body: incident });
    expect(first.body).toMatchObject({ eventsRemaining: 1, investigationsRemaining: 1 });
    expect(
      (
        await svc.api('POST', '/v1/investigation/', {
          token: small.member,
          body: { incidentId: first.body.incidentId },
        })
      ).status,
    ).toBe(202);
    const second = await svc.api('POST', '/v1/incidents/chat', { token: small.member, body: incident });
    expect(second.body).toMatchObject({ eventsRemaining: 0, investigationsRemaining: 0 });
    const refused = await svc.api('POST', '/v1/investigation/', {
      token: small.member,
      body: { incidentId: second.body.incidentId },
    });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: 'quota_exceeded', message: expect.stringContaining('quota of 1 ') });
    const over = await svc.api('POST', '/v1/incidents/chat', { token: small.member, body: incident });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ error: 'event_quota_exceeded', message: expect.stringContaining('quota of 2 ') });
    const counters = await svc.database.db
      .select()
      .from(usageCounters)
      .where(eq(usageCounters.tenantId, small.tenantId));
    expect(Object.fromEntries(counters.map((c) => [c.metric, c.count]))).toEqual({ events: 2, investigations: 1 });

    // The operator raises them: the next start and the next incident pass.
    expect(
      await cli(['tenant', 'quotas', '--tenant', small.tenantId, '--investigations', '2', '--events', '3']),
    ).toMatchObject({
      quotas: { investigationsPerMonth: 2, eventsPerMonth: 3, chatMessagesPerMonth: 20_000 },
    });
    expect(await usage(small)).toMatchObject({
      investigations: { limit: 2, used: 1, remaining: 1 },
      events: { limit: 3, used: 2, remaining: 1 },
    });
    expect(
      (
        await svc.api('POST', '/v1/investigation/', {
          token: small.member,
          body: { incidentId: second.body.incidentId },
        })
      ).status,
    ).toBe(202);
    expect((await svc.api('POST', '/v1/incidents/chat', { token: small.member, body: incident })).body).toMatchObject({
      eventsRemaining: 0,
      investigationsRemaining: 0,
    });
  });

  it("answers 404 for another tenant's usage and 401 without a token", async () => {
    const other = await svc.newTenant();
    const res = await svc.api('GET', `/v1/tenants/${other.tenantId}/usage`, { token: tenant.member });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    expect((await svc.api('GET', `/v1/tenants/${tenant.tenantId}/usage`)).status).toBe(401);
  });
});

describe('health', () => {
  it('reports liveness and the reachability of PostgreSQL, Temporal and the workers', async () => {
    const live = await svc.api('GET', '/health');
    expect(live.status).toBe(200);
    expect(live.body.status).toBe('ok');
    const detailed = await svc.api('GET', '/health/detailed');
    expect(detailed.status).toBe(200);
    expect(detailed.body).toMatchObject({
      status: 'ok',
      checks: { postgres: { ok: true }, temporal: { ok: true }, worker: { ok: true } },
    });
    expect(detailed.body.checks.worker.pollers).toBeGreaterThan(0);
    expect(typeof detailed.body.checks.postgres.latencyMs).toBe('number');
  });

  it('answers 503 when no worker polls the task queue', async () => {
    const idle = await (await import('../helpers/service.js')).startTestService({ withoutWorker: true });
    try {
      const res = await idle.api('GET', '/health/detailed');
      expect(res.status).toBe(503);
      expect(res.body.status).toBe('degraded');
      expect(res.body.checks.worker).toMatchObject({ ok: false, pollers: 0 });
      expect(res.body.checks.postgres.ok).toBe(true);
    } finally {
      await idle.stop();
    }
  });
});
