import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { skillInvocations, skills } from '../../src/db/schema/skills.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import { systemResolver, type HostResolver } from '../../src/skills/ssrf.js';
import { startTestService, TEST_SKILL_KEY, type ApiResponse, type TestService } from '../helpers/service.js';
import { startSkillServer, type SkillServer } from '../helpers/skill-server.js';

const SECRET = 'Bearer sk-live-9d8c7b6a-top-secret';
const OTHER_SECRET = 'tok_rotated_5e4d3c2b1a';

let svc: TestService;
let server: SkillServer;
let tenant: { tenantId: string; admin: string; member: string };
const logLines: string[] = [];
/** Every response body of this file, to prove no header value is ever returned. */
const responses: string[] = [];

const resolver: HostResolver = async (host) =>
  host === 'loopback.skills.test' ? [{ address: '127.0.0.2', family: 4 }] : systemResolver(host);

beforeAll(async () => {
  server = await startSkillServer();
  svc = await startTestService({
    skills: { allowedNetworks: ['127.0.0.1/32'], limits: { timeoutMs: 500, retryBaseDelayMs: 10 }, resolver },
    logLines,
  });
  tenant = await svc.newTenant({ plan: 'plan_pro', settings: { allowHttpSkills: true } });
});
afterAll(async () => {
  await svc?.stop();
  await server?.close();
});

const base = (tenantId: string) => `/api/v1/tenants/${tenantId}/skills`;

async function call<T = any>(
  method: string,
  path: string,
  options: { token?: string; body?: unknown } = {},
): Promise<ApiResponse<T>> {
  const res = await svc.api<T>(method, path, options);
  responses.push(typeof res.body === 'string' ? res.body : JSON.stringify(res.body));
  return res;
}

let counter = 0;
const uniqueName = (prefix = 'skill') => `${prefix}_${++counter}_${Date.now().toString(36)}`;

const httpSkill = (overrides: Record<string, unknown> = {}) => ({
  name: uniqueName(),
  description: 'Looks up a customer account by id',
  type: 'http',
  config: { url: `${server.url}/echo`, method: 'GET', headers: { Authorization: SECRET } },
  inputSchema: { type: 'object', properties: { customerId: { type: 'string' } }, required: ['customerId'] },
  ...overrides,
});

async function createSkill(body: Record<string, unknown> = httpSkill(), who = tenant) {
  const res = await call('POST', base(who.tenantId), { token: who.admin, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { skillId: string; name: string };
}

describe('POST /api/v1/tenants/{tenantId}/skills', () => {
  it('creates an http skill: 201 with the interface fields, header values encrypted at rest, audited without secrets', async () => {
    const body = httpSkill();
    const res = await call('POST', base(tenant.tenantId), { token: tenant.admin, body });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      skillId: expect.stringMatching(/^skl_[0-9a-z]{26}$/),
      tenantId: tenant.tenantId,
      name: body.name,
      description: body.description,
      type: 'http',
      enabled: true,
      createdAt: expect.any(String),
    });
    const [row] = await svc.database.db.select().from(skills).where(eq(skills.id, res.body.skillId));
    expect(row!.inputSchema).toEqual(body.inputSchema);
    const config = row!.config as { url: string; method: string; headers: Record<string, string> };
    expect(config.url).toBe(`${server.url}/echo`);
    expect(config.headers.Authorization).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(JSON.stringify(row)).not.toContain('sk-live');
    // The stored value opens with the key, for this tenant, skill and header only.
    const cipher = createSkillCipher(TEST_SKILL_KEY);
    expect(
      cipher.decrypt(config.headers.Authorization!, {
        tenantId: tenant.tenantId,
        skillId: row!.id,
        header: 'Authorization',
      }),
    ).toBe(SECRET);
    expect(() =>
      cipher.decrypt(config.headers.Authorization!, {
        tenantId: tenant.tenantId,
        skillId: 'skl_other',
        header: 'Authorization',
      }),
    ).toThrow();

    const audit = await svc.database.db
      .select()
      .from(auditLog)
      .where(eq(auditLog.targetId, res.body.skillId))
      .orderBy(auditLog.seq);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      action: 'skill.created',
      actorId: 'user-admin',
      details: { name: body.name, type: 'http', enabled: true, headerNames: ['Authorization'] },
    });
    expect(JSON.stringify(audit)).not.toContain(SECRET);
  });

  it('creates an integration skill and a disabled skill', async () => {
    const integration = await call('POST', base(tenant.tenantId), {
      token: tenant.admin,
      body: {
        name: uniqueName('ticket'),
        description: 'Opens a ticket',
        type: 'integration',
        config: { action: 'create_issue', provider: 'jira' },
      },
    });
    expect(integration.status).toBe(201);
    expect(integration.body.type).toBe('integration');
    const disabled = await call('POST', base(tenant.tenantId), {
      token: tenant.admin,
      body: httpSkill({ enabled: false }),
    });
    expect(disabled.body.enabled).toBe(false);
  });

  const longName = 'a'.repeat(65);
  const invalidBodies: Array<[string, Record<string, unknown>, RegExp]> = [
    ['name missing', { name: undefined }, /name/],
    ['name with capitals', { name: 'LookupCustomer' }, /snake_case/],
    ['name starting with a digit', { name: '1lookup' }, /snake_case/],
    ['name with a hyphen', { name: 'lookup-customer' }, /snake_case/],
    ['name over 64 characters', { name: longName }, /snake_case/],
    ['description missing', { description: undefined }, /description/],
    ['description empty', { description: '  ' }, /description is required/],
    ['description of zero-width characters', { description: '\u200b\u200b' }, /description must not be blank/],
    ['description over 500 characters', { description: 'd'.repeat(501) }, /at most 500/],
    ['type builtin with an http config', { type: 'builtin' }, /config\.action/],
    [
      'builtin with an unknown action',
      { type: 'builtin', config: { action: 'rollback_deployment' }, inputSchema: undefined },
      /config\.action: .*blast_radius/,
    ],
    ['builtin without an action', { type: 'builtin', config: {}, inputSchema: undefined }, /config\.action/],
    [
      'builtin config with another field',
      { type: 'builtin', config: { action: 'search_incidents', url: 'https://x.example' }, inputSchema: undefined },
      /config.*url/,
    ],
    ['builtin without config', { type: 'builtin', config: undefined, inputSchema: undefined }, /config/],
    [
      'builtin with its own inputSchema',
      { type: 'builtin', config: { action: 'search_incidents' } },
      /inputSchema: a builtin skill takes its action's input schema/,
    ],
    ['type unknown', { type: 'lambda' }, /type/],
    ['config missing', { config: undefined }, /config/],
    ['url missing', { config: { method: 'GET' } }, /config\.url/],
    ['url not a URL', { config: { url: 'not a url', method: 'GET' } }, /config\.url: url must be an absolute https/],
    ['url with another scheme', { config: { url: 'ftp://files.example.com/x', method: 'GET' } }, /config\.url/],
    [
      'url with credentials',
      { config: { url: 'https://user:pw@api.example.com/x', method: 'GET' } },
      /must not carry credentials/,
    ],
    [
      'url at the metadata address',
      { config: { url: 'http://169.254.169.254/latest/meta-data', method: 'GET' } },
      /169\.254\.169\.254 is a link-local/,
    ],
    [
      'url at a private address',
      { config: { url: 'https://10.0.0.1/x', method: 'GET' } },
      /10\.0\.0\.1 is a private address/,
    ],
    ['url at IPv6 loopback', { config: { url: 'https://[::1]/x', method: 'GET' } }, /::1 is a loopback address/],
    ['method missing', { config: { url: 'https://api.example.com' } }, /config\.method/],
    ['method unknown', { config: { url: 'https://api.example.com', method: 'TRACE' } }, /config\.method/],
    [
      'Host header',
      { config: { url: 'https://api.example.com', method: 'GET', headers: { Host: 'evil.example' } } },
      /Host and hop-by-hop headers/,
    ],
    [
      'hop-by-hop header',
      { config: { url: 'https://api.example.com', method: 'GET', headers: { Connection: 'close' } } },
      /Host and hop-by-hop headers/,
    ],
    [
      'Transfer-Encoding header',
      { config: { url: 'https://api.example.com', method: 'GET', headers: { 'transfer-encoding': 'chunked' } } },
      /hop-by-hop/,
    ],
    [
      'header name with a space',
      { config: { url: 'https://api.example.com', method: 'GET', headers: { 'X Bad': 'v' } } },
      /token characters/,
    ],
    [
      'header value with a line break',
      { config: { url: 'https://api.example.com', method: 'GET', headers: { 'X-A': 'v\r\nX-B: injected' } } },
      /line breaks/,
    ],
    [
      'header value too long',
      { config: { url: 'https://api.example.com', method: 'GET', headers: { 'X-A': 'v'.repeat(4097) } } },
      /at most 4096/,
    ],
    [
      'too many headers',
      {
        config: {
          url: 'https://api.example.com',
          method: 'GET',
          headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v'])),
        },
      },
      /at most 20 headers/,
    ],
    [
      'headers repeated in another case',
      { config: { url: 'https://api.example.com', method: 'GET', headers: { 'X-Key': 'a', 'x-key': 'b' } } },
      /unique/,
    ],
    ['unknown config field', { config: { url: 'https://api.example.com', method: 'GET', body: 'x' } }, /config/],
    ['integration without action', { type: 'integration', config: { provider: 'jira' } }, /config\.action/],
    [
      'integration with an unknown provider',
      { type: 'integration', config: { action: 'create_issue', provider: 'nope' } },
      /config\.provider/,
    ],
    ['inputSchema not valid JSON Schema', { inputSchema: { type: 'objectx' } }, /inputSchema: not a valid JSON Schema/],
    [
      'inputSchema with an unknown keyword',
      { inputSchema: { type: 'object', requried: ['a'] } },
      /unknown keyword: "requried"/,
    ],
    [
      'inputSchema with a remote $ref',
      { inputSchema: { $ref: 'https://schemas.example.com/x.json' } },
      /can't resolve reference/,
    ],
    [
      'inputSchema of an unsupported draft',
      { inputSchema: { $schema: 'http://json-schema.org/draft-04/schema#' } },
      /draft-07 and 2020-12/,
    ],
    ['inputSchema not an object', { inputSchema: ['type', 'object'] }, /inputSchema/],
    [
      'inputSchema that is a reference to itself',
      { inputSchema: { $ref: '#' } },
      /inputSchema: not a valid JSON Schema: \/ refers to itself \(\$ref\) without reading the input/,
    ],
    ['inputSchema with a self-reference in a branch', { inputSchema: { anyOf: [{ $ref: '#' }] } }, /refers to itself/],
    [
      'inputSchema with a reference cycle',
      { inputSchema: { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' } },
      /refers to itself/,
    ],
    [
      'inputSchema with uniqueItems and no maxItems',
      { inputSchema: { type: 'object', properties: { ids: { type: 'array', uniqueItems: true } } } },
      /\/properties\/ids uniqueItems needs maxItems of at most 1000/,
    ],
    [
      'inputSchema with uniqueItems past 1000 items',
      { inputSchema: { type: 'array', uniqueItems: true, maxItems: 1001 } },
      /uniqueItems needs maxItems of at most 1000/,
    ],
    [
      'inputSchema with a lookahead pattern',
      { inputSchema: { type: 'string', pattern: '^(?=a)a+$' } },
      /pattern "\^\(\?=a\)a\+\$" is not supported \(patterns are matched by RE2/,
    ],
    ['enabled not a boolean', { enabled: 'yes' }, /enabled/],
    ['an unknown field', { owner: 'me' }, /owner|unrecognized/i],
  ];

  it.each(invalidBodies)('400 validation_error: %s', async (_case, overrides, message) => {
    const body: Record<string, unknown> = { ...httpSkill(), ...overrides };
    for (const [k, v] of Object.entries(overrides)) if (v === undefined) delete body[k];
    const res = await call('POST', base(tenant.tenantId), { token: tenant.admin, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(res.body.message).toMatch(message);
    expect(res.body.details?.length).toBeGreaterThan(0);
  });

  it('refuses plain http unless the tenant allows it (tenant setting allowHttpSkills)', async () => {
    const strict = await svc.newTenant({ plan: 'plan_business' });
    const res = await call('POST', base(strict.tenantId), { token: strict.admin, body: httpSkill() });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/config\.url: must use https .*allowHttpSkills/);
    const allowed = await call('PATCH', `/v1/tenants/${strict.tenantId}`, {
      token: strict.admin,
      body: { settings: { allowHttpSkills: true } },
    });
    expect(allowed.body.settings.allowHttpSkills).toBe(true);
    expect((await call('POST', base(strict.tenantId), { token: strict.admin, body: httpSkill() })).status).toBe(201);
    const https = await call('POST', base(strict.tenantId), {
      token: strict.admin,
      body: httpSkill({ config: { url: 'https://api.example.com/lookup', method: 'POST' } }),
    });
    expect(https.status).toBe(201);
  });

  it('409 skill_name_conflict for a used name (decided by the unique index under concurrency) and for a builtin name', async () => {
    const name = uniqueName('dup');
    await createSkill(httpSkill({ name }));
    const again = await call('POST', base(tenant.tenantId), { token: tenant.admin, body: httpSkill({ name }) });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('skill_name_conflict');

    const racing = uniqueName('race');
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        call('POST', base(tenant.tenantId), { token: tenant.admin, body: httpSkill({ name: racing }) }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    const rows = await svc.database.db
      .select()
      .from(skills)
      .where(and(eq(skills.tenantId, tenant.tenantId), eq(skills.name, racing)));
    expect(rows).toHaveLength(1);

    const builtin = await call('POST', base(tenant.tenantId), {
      token: tenant.admin,
      body: httpSkill({ name: 'blast_radius' }),
    });
    expect(builtin.status).toBe(409);
    expect(builtin.body.message).toMatch(/builtin/);
    // Another tenant may use the same name.
    const other = await svc.newTenant({ plan: 'plan_pro', settings: { allowHttpSkills: true } });
    await createSkill(httpSkill({ name }), other);
  });
});

describe('plans, roles and tenants', () => {
  it('403 forbidden naming the Starter plan on create, patch and test of custom skills', async () => {
    const starter = await svc.newTenant({ plan: 'plan_starter', settings: { allowHttpSkills: true } });
    const create = await call('POST', base(starter.tenantId), { token: starter.admin, body: httpSkill() });
    expect(create.status).toBe(403);
    expect(create.body).toEqual({
      error: 'forbidden',
      message: expect.stringMatching(/The Starter plan does not include custom skills/),
    });
    // A skill kept from a former plan cannot be changed or tested either.
    const [kept] = await svc.database.db
      .insert(skills)
      .values({
        id: 'skl_kept_from_pro',
        tenantId: starter.tenantId,
        name: 'kept',
        description: 'd',
        type: 'http',
        config: { url: `${server.url}/echo`, method: 'GET' },
      })
      .returning();
    const patch = await call('PATCH', `${base(starter.tenantId)}/${kept!.id}`, {
      token: starter.admin,
      body: { enabled: false },
    });
    expect(patch.status).toBe(403);
    expect(patch.body.message).toMatch(/Starter plan/);
    const test = await call('POST', `${base(starter.tenantId)}/${kept!.id}/test`, {
      token: starter.admin,
      body: { input: {} },
    });
    expect(test.status).toBe(403);
    expect(test.body.message).toMatch(/Starter plan/);
    // Builtins are every tenant's: listed and testable on Starter.
    const list = await call('GET', base(starter.tenantId), { token: starter.member });
    expect(list.body.items.filter((s: { type: string }) => s.type === 'builtin')).toHaveLength(4);
    const builtin = await call('POST', `${base(starter.tenantId)}/skl_builtin_runbook_lookup/test`, {
      token: starter.admin,
      body: { input: { query: 'disk' } },
    });
    expect(builtin.status).toBe(200);
    expect(builtin.body).toMatchObject({ ok: true, output: { runbooks: [] } });
    // Deleting what is left is allowed.
    expect((await call('DELETE', `${base(starter.tenantId)}/${kept!.id}`, { token: starter.admin })).status).toBe(204);
  });

  it('members read; only admins create, change, delete and test', async () => {
    const { skillId } = await createSkill();
    expect((await call('GET', base(tenant.tenantId), { token: tenant.member })).status).toBe(200);
    expect((await call('GET', `${base(tenant.tenantId)}/${skillId}`, { token: tenant.member })).status).toBe(200);
    for (const [method, path, body] of [
      ['POST', base(tenant.tenantId), httpSkill()],
      ['PATCH', `${base(tenant.tenantId)}/${skillId}`, { enabled: false }],
      ['DELETE', `${base(tenant.tenantId)}/${skillId}`, undefined],
      ['POST', `${base(tenant.tenantId)}/${skillId}/test`, { input: { customerId: 'c1' } }],
    ] as const) {
      const res = await call(method, path, { token: tenant.member, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error).toBe('forbidden');
    }
  });

  it('401 without a token, also for unknown paths under /api/v1', async () => {
    expect((await call('GET', base(tenant.tenantId))).status).toBe(401);
    expect((await call('POST', base(tenant.tenantId), { body: httpSkill() })).status).toBe(401);
    expect((await call('GET', '/api/v1/nothing-here')).status).toBe(401);
  });

  it('is rate limited like /v1: every response carries the X-RateLimit headers', async () => {
    // A tenant of its own, so its window holds exactly the requests made here.
    const fresh = await svc.newTenant({ plan: 'plan_pro' });
    const res = await svc.api('GET', base(fresh.tenantId), { token: fresh.member });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('500');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('499');
    expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    const again = await svc.api('GET', base(fresh.tenantId), { token: fresh.member });
    // One less, unless the minute's window turned between the two.
    const expected = again.headers.get('x-ratelimit-reset') === res.headers.get('x-ratelimit-reset') ? '498' : '499';
    expect(again.headers.get('x-ratelimit-remaining')).toBe(expected);
  });

  it("404 for another tenant's id in the path, unknown skills and another tenant's skill", async () => {
    const other = await svc.newTenant({ plan: 'plan_pro', settings: { allowHttpSkills: true } });
    const theirs = await createSkill(httpSkill(), other);
    // Their tenant id in my path: not found, whatever the operation.
    for (const [method, path, body] of [
      ['GET', base(other.tenantId), undefined],
      ['POST', base(other.tenantId), httpSkill()],
      ['GET', `${base(other.tenantId)}/${theirs.skillId}`, undefined],
      ['PATCH', `${base(other.tenantId)}/${theirs.skillId}`, { enabled: false }],
      ['DELETE', `${base(other.tenantId)}/${theirs.skillId}`, undefined],
      ['POST', `${base(other.tenantId)}/${theirs.skillId}/test`, { input: {} }],
    ] as const) {
      const res = await call(method, path, { token: tenant.admin, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    // Their skill through my tenant's path, and an unknown id: skill_not_found.
    for (const skillId of [theirs.skillId, 'skl_01unknown']) {
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { enabled: false }],
        ['DELETE', undefined],
        ['POST', { input: {} }],
      ] as const) {
        const path =
          method === 'POST' ? `${base(tenant.tenantId)}/${skillId}/test` : `${base(tenant.tenantId)}/${skillId}`;
        const res = await call(method, path, { token: tenant.admin, ...(body ? { body } : {}) });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.error).toBe('skill_not_found');
      }
    }
    const [row] = await svc.database.db.select().from(skills).where(eq(skills.id, theirs.skillId));
    expect(row!.enabled).toBe(true);
  });
});

describe('GET list and one', () => {
  it('lists builtin skills first, then the tenant’s skills oldest first, across pages with a cursor', async () => {
    const fresh = await svc.newTenant({ plan: 'plan_pro', settings: { allowHttpSkills: true } });
    const created = [];
    for (let i = 0; i < 3; i++) created.push(await createSkill(httpSkill({ name: `fresh_${i}` }), fresh));
    const seen: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: ApiResponse = await call(
        'GET',
        `${base(fresh.tenantId)}?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
        { token: fresh.member },
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.items);
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen.map((s) => s.name)).toEqual([
      'blast_radius',
      'recent_deployments',
      'runbook_lookup',
      'search_incidents',
      'fresh_0',
      'fresh_1',
      'fresh_2',
    ]);
    expect(
      seen.slice(0, 4).every((s) => s.type === 'builtin' && s.enabled && s.skillId.startsWith('skl_builtin_')),
    ).toBe(true);
    expect(seen[0]).toMatchObject({
      tenantId: fresh.tenantId,
      config: {},
      inputSchema: { type: 'object', required: ['serviceId'] },
    });
    expect(seen[4]).toEqual({
      skillId: created[0]!.skillId,
      tenantId: fresh.tenantId,
      name: 'fresh_0',
      description: 'Looks up a customer account by id',
      type: 'http',
      config: { url: `${server.url}/***`, method: 'GET', headerNames: ['Authorization'] }, // a member sees the path masked
      inputSchema: { type: 'object', properties: { customerId: { type: 'string' } }, required: ['customerId'] },
      enabled: true,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect((await call('GET', `${base(fresh.tenantId)}?cursor=garbage`, { token: fresh.member })).status).toBe(400);
    expect((await call('GET', `${base(fresh.tenantId)}?limit=201`, { token: fresh.member })).status).toBe(400);
  });

  it('gets one skill with header names only, and a builtin by its id', async () => {
    const { skillId } = await createSkill(
      httpSkill({
        config: {
          url: `${server.url}/echo`,
          method: 'POST',
          headers: { Authorization: SECRET, 'X-Api-Key': OTHER_SECRET },
        },
      }),
    );
    const res = await call('GET', `${base(tenant.tenantId)}/${skillId}`, { token: tenant.member });
    expect(res.body.config).toEqual({
      url: `${server.url}/***`,
      method: 'POST',
      headerNames: ['Authorization', 'X-Api-Key'],
    }); // a member's view
    const builtin = await call('GET', `${base(tenant.tenantId)}/skl_builtin_blast_radius`, { token: tenant.member });
    expect(builtin.status).toBe(200);
    expect(builtin.body).toMatchObject({
      name: 'blast_radius',
      type: 'builtin',
      enabled: true,
      description: expect.stringMatching(/depend/),
    });
  });
  it('shows members an http skill URL with its path and query values masked; admins see it whole', async () => {
    const url = `${server.url}/search?q=errors&api_key=qtok-9f8e7d-query-value#frag`;
    const { skillId } = await createSkill(httpSkill({ config: { url, method: 'GET' } }));
    const asAdmin = await call('GET', `${base(tenant.tenantId)}/${skillId}`, { token: tenant.admin });
    expect(asAdmin.body.config.url).toBe(url);
    const asMember = await call('GET', `${base(tenant.tenantId)}/${skillId}`, { token: tenant.member });
    expect(asMember.status).toBe(200);
    expect(asMember.body.config.url).toBe(`${server.url}/***?q=***&api_key=***#***`);
    const list = await call('GET', `${base(tenant.tenantId)}?limit=200`, { token: tenant.member });
    const listed = list.body.items.find((i: { skillId: string }) => i.skillId === skillId);
    expect(listed.config.url).toBe(`${server.url}/***?q=***&api_key=***#***`);
    expect(JSON.stringify(list.body)).not.toContain('qtok-9f8e7d-query-value');
    const adminList = await call('GET', `${base(tenant.tenantId)}?limit=200`, { token: tenant.admin });
    expect(adminList.body.items.find((i: { skillId: string }) => i.skillId === skillId).config.url).toBe(url);
  });
});

describe('PATCH /api/v1/tenants/{tenantId}/skills/{skillId}', () => {
  it('changes only the sent fields, answers the interface fields, and audits field names only', async () => {
    const created = await createSkill();
    const before = (await svc.database.db.select().from(skills).where(eq(skills.id, created.skillId)))[0]!;
    const res = await call('PATCH', `${base(tenant.tenantId)}/${created.skillId}`, {
      token: tenant.admin,
      body: { enabled: false },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      skillId: created.skillId,
      name: created.name,
      enabled: false,
      updatedAt: expect.any(String),
    });
    const after = (await svc.database.db.select().from(skills).where(eq(skills.id, created.skillId)))[0]!;
    expect(after).toMatchObject({
      description: before.description,
      config: before.config,
      inputSchema: before.inputSchema,
      enabled: false,
    });
    expect(after.updatedAt.getTime()).toBeGreaterThanOrEqual(before.updatedAt.getTime());

    const replaced = await call('PATCH', `${base(tenant.tenantId)}/${created.skillId}`, {
      token: tenant.admin,
      body: {
        description: 'New words',
        config: { url: `${server.url}/echo`, method: 'POST', headers: { 'X-Api-Key': OTHER_SECRET } },
        inputSchema: null,
      },
    });
    expect(replaced.status).toBe(200);
    const view = await call('GET', `${base(tenant.tenantId)}/${created.skillId}`, { token: tenant.member });
    expect(view.body).toMatchObject({
      description: 'New words',
      config: { method: 'POST', headerNames: ['X-Api-Key'] },
      inputSchema: null,
      enabled: false,
    });
    const stored = JSON.stringify(
      (await svc.database.db.select().from(skills).where(eq(skills.id, created.skillId)))[0],
    );
    expect(stored).not.toContain(OTHER_SECRET);
    expect(stored).not.toContain('Authorization');

    const audit = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, created.skillId), eq(auditLog.action, 'skill.updated')))
      .orderBy(auditLog.seq);
    expect(audit.map((a) => a.details)).toEqual([
      { name: created.name, fields: ['enabled'], enabled: false },
      { name: created.name, fields: ['description', 'inputSchema', 'config'], headerNames: ['X-Api-Key'] },
    ]);
    expect(JSON.stringify(audit)).not.toContain(OTHER_SECRET);
  });

  it('400 for name or type in the body, config that does not fit the type, invalid values, and builtins', async () => {
    const { skillId } = await createSkill();
    const integration = await createSkill({
      name: uniqueName('int'),
      description: 'd',
      type: 'integration',
      config: { action: 'create_issue' },
    });
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      [skillId, { name: 'renamed' }, /name|unrecognized/i],
      [skillId, { type: 'integration' }, /type|unrecognized/i],
      [skillId, { description: 'd'.repeat(501) }, /at most 500/],
      [skillId, { config: { action: 'create_issue' } }, /config\.url/],
      [skillId, { config: { url: 'https://api.example.com', method: 'GET', headers: { Host: 'x' } } }, /hop-by-hop/],
      [skillId, { config: { url: 'http://192.168.1.10/', method: 'GET' } }, /private address/],
      [integration.skillId, { config: { url: 'https://api.example.com', method: 'GET' } }, /config\.action/],
      [skillId, { inputSchema: { type: 7 } }, /not a valid JSON Schema/],
      [skillId, { enabled: 'no' }, /enabled/],
      ['skl_builtin_blast_radius', { enabled: false }, /Builtin skills ship with the service and cannot be changed/],
    ];
    for (const [id, body, message] of cases) {
      const res = await call('PATCH', `${base(tenant.tenantId)}/${id}`, { token: tenant.admin, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('validation_error');
      expect(res.body.message).toMatch(message);
    }
  });
});

describe('DELETE /api/v1/tenants/{tenantId}/skills/{skillId}', () => {
  it('204, then 404 skill_not_found; audited; builtins cannot be deleted', async () => {
    const { skillId, name } = await createSkill();
    const res = await call('DELETE', `${base(tenant.tenantId)}/${skillId}`, { token: tenant.admin });
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect((await call('GET', `${base(tenant.tenantId)}/${skillId}`, { token: tenant.admin })).body.error).toBe(
      'skill_not_found',
    );
    const again = await call('DELETE', `${base(tenant.tenantId)}/${skillId}`, { token: tenant.admin });
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('skill_not_found');
    const [audit] = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, skillId), eq(auditLog.action, 'skill.deleted')))
      .orderBy(auditLog.seq);
    expect(audit!.details).toEqual({ name });
    // The name is free again.
    await createSkill(httpSkill({ name }));
    const builtin = await call('DELETE', `${base(tenant.tenantId)}/skl_builtin_search_incidents`, {
      token: tenant.admin,
    });
    expect(builtin.status).toBe(400);
    expect(builtin.body.message).toMatch(/cannot be deleted/);
  });
});

describe('POST /api/v1/tenants/{tenantId}/skills/{skillId}/test', () => {
  it('runs the skill once through Temporal: the server sees the decrypted header; 200 with the output', async () => {
    const { skillId } = await createSkill();
    const before = server.hits('/echo').length;
    const res = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: { customerId: 'c-7' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      skillId,
      invocationId: expect.stringMatching(/^ski_/),
      ok: true,
      // The echo carries the header back; what is kept and answered has it masked (decision 226).
      output: { method: 'GET', query: { customerId: 'c-7' }, body: null, authorization: '[redacted]', apiKey: null },
      durationMs: expect.any(Number),
    });
    expect(server.hits('/echo').length - before).toBe(1);
    expect(server.hits('/echo').at(-1)!.headers.authorization).toBe(SECRET);
    // The workflow ran (workflow id = invocation id) and recorded the invocation.
    const description = await svc.client.workflow.getHandle(res.body.invocationId).describe();
    expect(description.type).toBe('skillTestWorkflow');
    expect(description.status.name).toBe('COMPLETED');
    const [row] = await svc.database.db
      .select()
      .from(skillInvocations)
      .where(eq(skillInvocations.id, res.body.invocationId));
    expect(row).toMatchObject({
      tenantId: tenant.tenantId,
      skillId,
      status: 'succeeded',
      input: { customerId: 'c-7' },
    });
  });

  it('answers a failing skill with 200 ok:false and its error: 4xx, timeout, oversized, disabled, refused address', async () => {
    const run = async (config: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
      const { skillId } = await createSkill(httpSkill({ config, inputSchema: undefined, ...extra }));
      const res = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
        token: tenant.admin,
        body: { input: {} },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        skillId,
        ok: false,
        invocationId: expect.stringMatching(/^ski_/),
        durationMs: expect.any(Number),
      });
      return res.body.error as { code: string; message: string };
    };
    expect(await run({ url: `${server.url}/not-found`, method: 'GET' })).toMatchObject({
      code: 'http_error',
      message: expect.stringMatching(/answered 404/),
    });
    expect((await run({ url: `${server.url}/hang`, method: 'GET' })).code).toBe('timeout');
    expect((await run({ url: `${server.url}/big`, method: 'GET' })).code).toBe('response_too_large');
    const before = server.received.length;
    expect((await run({ url: `${server.url}/echo`, method: 'GET' }, { enabled: false })).code).toBe('skill_disabled');
    expect(server.received.length).toBe(before);
    // A name resolving to 127.0.0.2: loopback, and only 127.0.0.1 is allowlisted.
    expect(await run({ url: `http://loopback.skills.test:${server.port}/echo`, method: 'GET' })).toMatchObject({
      code: 'ssrf_blocked',
      message: expect.stringMatching(/loopback\.skills\.test resolves to 127\.0\.0\.2, which is a loopback address/),
    });
    expect(
      await run({
        url: `${server.url}/redirect?to=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`,
        method: 'GET',
      }),
    ).toMatchObject({
      code: 'ssrf_blocked',
    });
    expect(server.received.length).toBe(before + 1); // only the redirect reached our server
  });

  it('masks a header value the endpoint echoes, in the answer, the stored invocation and the workflow history', async () => {
    const { skillId } = await createSkill(
      httpSkill({
        config: { url: `${server.url}/echo-500`, method: 'GET', headers: { Authorization: SECRET } },
        inputSchema: undefined,
      }),
    );
    const res = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: {} },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      ok: false,
      error: { code: 'http_error', message: expect.stringMatching(/answered 500/), details: { status: 500 } },
    });
    const excerpt = res.body.error.details.body as string;
    expect(excerpt).toContain('"authorization":"[redacted]"');
    expect(excerpt).toContain('"token":"[redacted]"'); // the credential without its scheme
    expect(server.hits('/echo-500').at(-1)!.headers.authorization).toBe(SECRET); // it was sent
    const [row] = await svc.database.db
      .select()
      .from(skillInvocations)
      .where(eq(skillInvocations.id, res.body.invocationId));
    expect(JSON.stringify(row)).toContain('[redacted]');
    expect(JSON.stringify(row)).not.toContain('sk-live');
    const history = JSON.stringify(await svc.client.workflow.getHandle(res.body.invocationId).fetchHistory());
    expect(history).not.toContain('sk-live');
  });

  it('keeps an answer with text PostgreSQL cannot store, once: each NUL becomes U+FFFD', async () => {
    const { skillId } = await createSkill(
      httpSkill({ config: { url: `${server.url}/nul`, method: 'GET' }, inputSchema: undefined }),
    );
    const before = server.hits('/nul').length;
    const res = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: {} },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, output: { status: 'ok', note: 'a\uFFFDb', 'k\uFFFD': 1 } });
    expect(server.hits('/nul').length - before).toBe(1);
    const [row] = await svc.database.db
      .select()
      .from(skillInvocations)
      .where(eq(skillInvocations.id, res.body.invocationId));
    expect(row).toMatchObject({ status: 'succeeded', output: { status: 'ok', note: 'a\uFFFDb', 'k\uFFFD': 1 } });
  });

  it('400 validation_error with details for input that does not match the input schema; nothing runs', async () => {
    const { skillId } = await createSkill();
    const before = server.received.length;
    const res = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: { customerId: 42 } },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'validation_error',
      message: expect.stringMatching(/input does not match the skill's input schema: \/customerId must be string/),
      details: [{ path: 'input/customerId', message: 'must be string' }],
    });
    const missing = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, { token: tenant.admin, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([{ path: 'input', message: "must have required property 'customerId'" }]);
    const extra = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: {}, dryRun: true },
    });
    expect(extra.status).toBe(400);
    expect(server.received.length).toBe(before);
  });

  it('400, not a 500, for a stored input schema that refers to itself (stored before that was refused)', async () => {
    const { skillId } = await createSkill();
    await svc.database.db
      .update(skills)
      .set({ inputSchema: { $ref: '#' } })
      .where(eq(skills.id, skillId));
    const before = server.received.length;
    const res = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: { a: 1 } },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: 'validation_error',
      message: expect.stringMatching(/input schema refers to itself/),
    });
    expect(server.received.length).toBe(before);
  });

  it('matches input schema patterns in linear time: a catastrophic pattern answers at once', async () => {
    // `^(a+)+$` on 40 a's and a '!' takes a backtracking RegExp hours; RE2 takes microseconds.
    const { skillId } = await createSkill(
      httpSkill({
        inputSchema: {
          type: 'object',
          properties: { customerId: { type: 'string', pattern: '^(a+)+$' } },
          patternProperties: { '^x(a|aa)+$': { type: 'number' } },
        },
      }),
    );
    const before = server.received.length;
    const started = performance.now();
    const res = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: { customerId: `${'a'.repeat(40)}!`, [`x${'a'.repeat(40)}`]: 'not a number' } },
    });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([
      { path: 'input/customerId', message: 'must match pattern "^(a+)+$"' },
      { path: `input/x${'a'.repeat(40)}`, message: 'must be number' },
    ]);
    expect(server.received.length).toBe(before);
    const ok = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: { customerId: 'aaaa' } },
    });
    expect(ok.body).toMatchObject({ ok: true, output: { query: { customerId: 'aaaa' } } });
    responses.pop(); // the echo carries the header back
  });

  it('checks string formats in linear time: a crafted url answers at once, and holds no other tenant back', async () => {
    // ajv-formats' url expression takes quadratic time on this: 13 s for the process, every tenant included.
    const { skillId } = await createSkill(
      httpSkill({ inputSchema: { type: 'object', properties: { u: { type: 'string', format: 'url' } } } }),
    );
    const crafted = `http://${':@'.repeat(60_000)}`;
    const started = performance.now();
    const res = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: { u: crafted } },
    });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: 'input/u', message: 'must match format "url"' }]);
    const ok = await call('POST', `${base(tenant.tenantId)}/${skillId}/test`, {
      token: tenant.admin,
      body: { input: { u: 'https://status.example.com/a?b=c' } },
    });
    expect(ok.body).toMatchObject({ ok: true });
    responses.pop(); // the echo carries the header back
  });

  it('runs builtin skills for the tenant', async () => {
    const res = await call('POST', `${base(tenant.tenantId)}/skl_builtin_search_incidents/test`, {
      token: tenant.admin,
      body: { input: { query: 'nothing like it' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, output: { incidents: [] } });
    const invalid = await call('POST', `${base(tenant.tenantId)}/skl_builtin_blast_radius/test`, {
      token: tenant.admin,
      body: { input: {} },
    });
    expect(invalid.status).toBe(400);
    const unknown = await call('POST', `${base(tenant.tenantId)}/skl_builtin_blast_radius/test`, {
      token: tenant.admin,
      body: { input: { serviceId: 'svc_none' } },
    });
    expect(unknown.body).toMatchObject({ ok: false, error: { code: 'not_found' } });
    // No body at all: the input is {}.
    const bare = await call('POST', `${base(tenant.tenantId)}/skl_builtin_recent_deployments/test`, {
      token: tenant.admin,
    });
    expect(bare.status).toBe(200);
    expect(bare.body).toMatchObject({ ok: true, output: { deployments: [], sinceMinutes: 1440 } });
  });
});

describe('OpenAPI', () => {
  it('documents the skills endpoints under /api/v1 with their schemas', async () => {
    const doc = (await svc.api('GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths['/api/v1/tenants/{tenantId}/skills']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/api/v1/tenants/{tenantId}/skills/{skillId}']).sort()).toEqual([
      'delete',
      'get',
      'patch',
    ]);
    expect(doc.paths['/api/v1/tenants/{tenantId}/skills/{skillId}/test'].post).toBeDefined();
    expect(doc.components.schemas.CreateSkill.properties.name.pattern).toBe('^[a-z][a-z0-9_]{0,63}$');
    expect(doc.components.schemas.HttpSkillConfig.properties.method.enum).toEqual([
      'GET',
      'POST',
      'PUT',
      'PATCH',
      'DELETE',
    ]);
  });
});

describe('secrets', () => {
  it('no response, audit row or log line ever holds a header value', async () => {
    expect(responses.length).toBeGreaterThan(50);
    const all = responses.join('\n');
    expect(all).not.toContain('sk-live');
    expect(all).not.toContain(OTHER_SECRET);
    const audit = JSON.stringify(await svc.database.db.select().from(auditLog));
    expect(audit).not.toContain('sk-live');
    expect(audit).not.toContain(OTHER_SECRET);
    const logs = logLines.join('\n');
    expect(logs).toContain('skill call succeeded');
    expect(logs).not.toContain('sk-live');
    expect(logs).not.toContain(OTHER_SECRET);
  });
});
