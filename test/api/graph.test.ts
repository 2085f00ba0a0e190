import { and, eq, inArray, or } from 'drizzle-orm';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { serviceEdges, services } from '../../src/db/schema/topology.js';
import {
  startTestService,
  TEST_JWT_SECRET,
  TOKEN_AUDIENCE,
  TOKEN_ISSUER,
  type TestService,
} from '../helpers/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true });
});
afterAll(() => svc?.stop());

type Tenant = Awaited<ReturnType<TestService['newTenant']>>;
type Node = {
  serviceId: string;
  name: string;
  type: string;
  team: string | null;
  criticality: number;
  createdAt: string;
  updatedAt: string;
};

async function createNode(token: string, name: string, extra: Record<string, unknown> = {}): Promise<Node> {
  const res = await svc.api('POST', '/v1/graph/nodes', { token, body: { name, type: 'api', ...extra } });
  expect(res.status).toBe(201);
  return res.body;
}

async function createEdge(token: string, sourceServiceId: string, targetServiceId: string): Promise<string> {
  const res = await svc.api('POST', '/v1/graph/edges', { token, body: { sourceServiceId, targetServiceId } });
  expect(res.status).toBe(201);
  return res.body.edgeId;
}

/** Nodes by name (criticality per name, default 5) and `dependent → dependency` edges. */
async function buildGraph(
  tenant: Tenant,
  names: string[],
  edges: Array<[string, string]>,
  criticality: Record<string, number> = {},
) {
  const ids: Record<string, string> = {};
  for (const name of names) {
    ids[name] = (
      await createNode(tenant.member, name, criticality[name] ? { criticality: criticality[name] } : {})
    ).serviceId;
  }
  for (const [source, target] of edges) await createEdge(tenant.member, ids[source]!, ids[target]!);
  return ids;
}

async function blast(tenant: Tenant, serviceId: string) {
  const res = await svc.api('GET', `/v1/graph/blast-radius/${serviceId}`, { token: tenant.member });
  expect(res.status).toBe(200);
  return res.body as {
    serviceId: string;
    affectedServices: Array<{ serviceId: string; name: string; hops: number; impact: string }>;
    totalAffected: number;
  };
}

/** `[name, hops, impact]` of each affected service, in the answer's order. */
function summary(result: Awaited<ReturnType<typeof blast>>) {
  return result.affectedServices.map((a) => [a.name, a.hops, a.impact]);
}

function tokenWithRoles(tenantId: string, roles: string[]): string {
  return jwt.sign({ tenant_id: tenantId, roles }, TEST_JWT_SECRET, {
    algorithm: 'HS256',
    issuer: TOKEN_ISSUER,
    audience: TOKEN_AUDIENCE,
    subject: 'u-viewer',
    expiresIn: 600,
  });
}

async function auditFor(targetId: string) {
  return svc.database.db
    .select()
    .from(auditLog)
    .where(eq(auditLog.targetId, targetId))
    .orderBy(auditLog.occurredAt, auditLog.id);
}

describe('service nodes', () => {
  it('creates a node per the interface: defaults, trimmed name, stored row and audit row', async () => {
    const tenant = await svc.newTenant();
    const res = await svc.api('POST', '/v1/graph/nodes', {
      token: tenant.member,
      body: { name: '  checkout-api  ', type: 'api' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      serviceId: expect.stringMatching(/^svc_[0-9a-z]{26}$/),
      name: 'checkout-api',
      type: 'api',
      team: null,
      criticality: 5,
      repositories: [],
      createdAt: expect.any(String),
      updatedAt: res.body.createdAt,
    });
    const [row] = await svc.database.db.select().from(services).where(eq(services.id, res.body.serviceId));
    expect(row).toMatchObject({
      tenantId: tenant.tenantId,
      name: 'checkout-api',
      type: 'api',
      team: null,
      criticality: 5,
    });
    expect(row!.createdAt.toISOString()).toBe(res.body.createdAt);
    const [audit] = await auditFor(res.body.serviceId);
    expect(audit).toMatchObject({
      tenantId: tenant.tenantId,
      actorType: 'user',
      actorId: 'user-member',
      action: 'service.created',
      targetType: 'service',
      details: { name: 'checkout-api', type: 'api', team: null, criticality: 5 },
    });

    const full = await svc.api('POST', '/v1/graph/nodes', {
      token: tenant.admin,
      body: { name: 'orders-db', type: 'database', team: ' payments ', criticality: 9 },
    });
    expect(full.status).toBe(201);
    expect(full.body).toMatchObject({ name: 'orders-db', type: 'database', team: 'payments', criticality: 9 });
    const explicitNull = await svc.api('POST', '/v1/graph/nodes', {
      token: tenant.member,
      body: { name: 'q', type: 'queue', team: null },
    });
    expect(explicitNull.status).toBe(201);
    expect(explicitNull.body.team).toBeNull();
    for (const type of ['worker', 'cache']) {
      expect(
        (await svc.api('POST', '/v1/graph/nodes', { token: tenant.member, body: { name: type, type } })).status,
      ).toBe(201);
    }
    const longest = await svc.api('POST', '/v1/graph/nodes', {
      token: tenant.member,
      body: { name: 'n'.repeat(200), type: 'api', criticality: 1 },
    });
    expect(longest.status).toBe(201);
    expect(
      (
        await svc.api('POST', '/v1/graph/nodes', {
          token: tenant.member,
          body: { name: 'ten', type: 'api', criticality: 10 },
        })
      ).status,
    ).toBe(201);
  });

  it('rejects every invalid body with 400 validation_error and stores nothing', async () => {
    const tenant = await svc.newTenant();
    const invalid: unknown[] = [
      {},
      { type: 'api' },
      { name: '', type: 'api' },
      { name: '   ', type: 'api' },
      { name: 'n'.repeat(201), type: 'api' },
      { name: 7, type: 'api' },
      { name: 'x' },
      { name: 'x', type: 'lambda' },
      { name: 'x', type: 'API' },
      { name: 'x', type: 'api', team: '' },
      { name: 'x', type: 'api', team: '  ' },
      { name: 'x', type: 'api', team: 't'.repeat(101) },
      { name: 'x', type: 'api', team: 5 },
      { name: 'checkout\napi', type: 'api' },
      { name: 'x', type: 'api', team: 'sre\u0085' },
      { name: 'x', type: 'api', criticality: 0 },
      { name: 'x', type: 'api', criticality: 11 },
      { name: 'x', type: 'api', criticality: 5.5 },
      { name: 'x', type: 'api', criticality: '5' },
      { name: 'x', type: 'api', criticality: null },
      [],
      'x',
    ];
    for (const body of invalid) {
      const res = await svc.api('POST', '/v1/graph/nodes', { token: tenant.member, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('validation_error');
      expect(typeof res.body.message).toBe('string');
    }
    const malformed = await svc.api('POST', '/v1/graph/nodes', {
      token: tenant.member,
      rawBody: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe('validation_error');
    const named = await svc.api('POST', '/v1/graph/nodes', {
      token: tenant.member,
      body: { name: 'x', type: 'lambda', criticality: 11 },
    });
    expect(named.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['criticality', 'type']);
    expect(await svc.database.db.select().from(services).where(eq(services.tenantId, tenant.tenantId))).toEqual([]);
  });

  it('answers 409 conflict for a name the tenant already has, also under concurrent creation, but not across tenants', async () => {
    const tenant = await svc.newTenant();
    const first = await createNode(tenant.member, 'payments');
    for (const name of ['payments', '  payments ']) {
      const again = await svc.api('POST', '/v1/graph/nodes', { token: tenant.admin, body: { name, type: 'worker' } });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ error: 'conflict', message: 'A service named "payments" already exists' });
    }
    const racing = await Promise.all(
      Array.from({ length: 6 }, () =>
        svc.api('POST', '/v1/graph/nodes', { token: tenant.member, body: { name: 'racy', type: 'api' } }),
      ),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const rows = await svc.database.db.select().from(services).where(eq(services.tenantId, tenant.tenantId));
    expect(rows.map((r) => r.name).sort()).toEqual(['payments', 'racy']);
    expect(rows.find((r) => r.name === 'payments')!.id).toBe(first.serviceId);
    const audits = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenant.tenantId), eq(auditLog.action, 'service.created')))
      .orderBy(auditLog.seq);
    expect(audits).toHaveLength(2);

    const other = await svc.newTenant();
    expect(
      (await svc.api('POST', '/v1/graph/nodes', { token: other.member, body: { name: 'payments', type: 'api' } }))
        .status,
    ).toBe(201);
  });

  it("gets one node; an unknown or another tenant's node is 404 not_found; an over-long id is 400", async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const node = await createNode(tenant.member, 'search', { team: 'discovery', criticality: 7 });
    const got = await svc.api('GET', `/v1/graph/nodes/${node.serviceId}`, { token: tenant.member });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(node);
    for (const [token, id] of [
      [tenant.member, 'svc_nope'],
      [other.member, node.serviceId],
      [other.admin, node.serviceId],
    ] as const) {
      const res = await svc.api('GET', `/v1/graph/nodes/${id}`, { token });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found', message: 'No service has that identifier' });
    }
    const long = await svc.api('GET', `/v1/graph/nodes/${'s'.repeat(65)}`, { token: tenant.member });
    expect(long.status).toBe(400);
    expect(long.body.error).toBe('validation_error');
  });

  it('updates team, criticality and type (only those), with an audit row of the changes', async () => {
    const tenant = await svc.newTenant();
    const node = await createNode(tenant.member, 'ledger', { team: 'finance' });
    const patched = await svc.api('PATCH', `/v1/graph/nodes/${node.serviceId}`, {
      token: tenant.member,
      body: { criticality: 9, type: 'worker' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...node, criticality: 9, type: 'worker', updatedAt: expect.any(String) });
    expect(Date.parse(patched.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(node.updatedAt));
    const cleared = await svc.api('PATCH', `/v1/graph/nodes/${node.serviceId}`, {
      token: tenant.admin,
      body: { team: null },
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ team: null, criticality: 9, type: 'worker', name: 'ledger' });
    const renamed = await svc.api('PATCH', `/v1/graph/nodes/${node.serviceId}`, {
      token: tenant.admin,
      body: { team: '  core  ' },
    });
    expect(renamed.body.team).toBe('core');
    const [row] = await svc.database.db.select().from(services).where(eq(services.id, node.serviceId));
    expect(row).toMatchObject({ name: 'ledger', team: 'core', criticality: 9, type: 'worker' });
    expect(row!.updatedAt.toISOString()).toBe(renamed.body.updatedAt);
    const audits = await auditFor(node.serviceId);
    expect(audits.map((a) => [a.action, a.details])).toEqual([
      ['service.created', { name: 'ledger', type: 'api', team: 'finance', criticality: 5 }],
      ['service.updated', { criticality: 9, type: 'worker' }],
      ['service.updated', { team: null }],
      ['service.updated', { team: 'core' }],
    ]);
  });

  it('rejects an invalid update with 400 and an unknown or foreign node with 404, leaving the row as it was', async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const node = await createNode(tenant.member, 'cache-1', { type: 'cache', criticality: 3 });
    const invalid: unknown[] = [
      {},
      { name: 'renamed' },
      { criticality: 3, name: 'renamed' },
      { unknown: true },
      { criticality: 0 },
      { criticality: 11 },
      { criticality: 2.5 },
      { criticality: null },
      { type: 'lambda' },
      { type: null },
      { team: '' },
      { team: 't'.repeat(101) },
      { team: undefined },
    ];
    for (const body of invalid) {
      const res = await svc.api('PATCH', `/v1/graph/nodes/${node.serviceId}`, { token: tenant.member, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    for (const [token, id] of [
      [tenant.member, 'svc_nope'],
      [other.admin, node.serviceId],
    ] as const) {
      const res = await svc.api('PATCH', `/v1/graph/nodes/${id}`, { token, body: { criticality: 10 } });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const [row] = await svc.database.db.select().from(services).where(eq(services.id, node.serviceId));
    expect(row).toMatchObject({ name: 'cache-1', type: 'cache', team: null, criticality: 3 });
    expect(row!.updatedAt.toISOString()).toBe(node.updatedAt);
    expect((await auditFor(node.serviceId)).map((a) => a.action)).toEqual(['service.created']);
  });

  it('deletes a node with 204, removing every edge to or from it, and answers 404 after', async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const ids = await buildGraph(
      tenant,
      ['api', 'db', 'worker', 'cache'],
      [
        ['api', 'db'],
        ['worker', 'db'],
        ['db', 'cache'],
        ['api', 'cache'],
      ],
    );
    expect((await svc.api('DELETE', `/v1/graph/nodes/${ids.db}`, { token: other.admin })).status).toBe(404);
    const removed = await svc.api('DELETE', `/v1/graph/nodes/${ids.db}`, { token: tenant.member });
    expect(removed.status).toBe(204);
    expect(removed.body).toBe('');
    expect(await svc.database.db.select().from(services).where(eq(services.id, ids.db!))).toEqual([]);
    const edges = await svc.database.db.select().from(serviceEdges).where(eq(serviceEdges.tenantId, tenant.tenantId));
    expect(edges.map((e) => [e.sourceServiceId, e.targetServiceId])).toEqual([[ids.api, ids.cache]]);
    const deleted = (await auditFor(ids.db!)).find((a) => a.action === 'service.deleted');
    expect(deleted).toMatchObject({
      action: 'service.deleted',
      targetType: 'service',
      details: { name: 'db', edgesRemoved: 3 },
    });
    const listed = await svc.api('GET', `/v1/graph/edges`, { token: tenant.member });
    expect(listed.body.total).toBe(1);
    const again = await svc.api('DELETE', `/v1/graph/nodes/${ids.db}`, { token: tenant.member });
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('not_found');
    expect((await svc.api('GET', `/v1/graph/nodes/${ids.db}`, { token: tenant.member })).status).toBe(404);
    // The name is free again.
    expect(
      (await svc.api('POST', '/v1/graph/nodes', { token: tenant.member, body: { name: 'db', type: 'database' } }))
        .status,
    ).toBe(201);
  });

  it('lists nodes newest first with a cursor, total across pages, and type and team filters', async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    await createNode(other.member, 'theirs');
    const names = ['n1', 'n2', 'n3', 'n4', 'n5'];
    for (const [i, name] of names.entries()) {
      await createNode(tenant.member, name, { type: i % 2 === 0 ? 'api' : 'database', team: i < 3 ? 'core' : null });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    const pages: number[] = [];
    do {
      const res: { status: number; body: { items: Node[]; total: number; nextCursor: string | null } } = await svc.api(
        'GET',
        `/v1/graph/nodes?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        { token: tenant.member },
      );
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(5);
      pages.push(res.body.items.length);
      seen.push(...res.body.items.map((n) => n.name));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(pages).toEqual([2, 2, 1]);
    expect(seen).toEqual(['n5', 'n4', 'n3', 'n2', 'n1']);

    const all = await svc.api('GET', '/v1/graph/nodes', { token: tenant.admin });
    expect(all.body).toMatchObject({ total: 5, nextCursor: null });
    expect(Object.keys(all.body.items[0]).sort()).toEqual([
      'createdAt',
      'criticality',
      'name',
      'repositories',
      'serviceId',
      'team',
      'type',
      'updatedAt',
    ]);
    const apis = await svc.api('GET', '/v1/graph/nodes?type=api', { token: tenant.member });
    expect(apis.body.items.map((n: Node) => n.name)).toEqual(['n5', 'n3', 'n1']);
    expect(apis.body.total).toBe(3);
    const coreDatabases = await svc.api('GET', '/v1/graph/nodes?type=database&team=core', { token: tenant.member });
    expect(coreDatabases.body).toMatchObject({ total: 1, nextCursor: null });
    expect(coreDatabases.body.items.map((n: Node) => n.name)).toEqual(['n2']);
    const filteredPage = await svc.api('GET', '/v1/graph/nodes?team=core&limit=1', { token: tenant.member });
    expect(filteredPage.body.total).toBe(3);
    const filteredNext = await svc.api(
      'GET',
      `/v1/graph/nodes?team=core&limit=5&cursor=${filteredPage.body.nextCursor}`,
      { token: tenant.member },
    );
    expect(filteredNext.body.items.map((n: Node) => n.name)).toEqual(['n2', 'n1']);

    for (const query of [
      'limit=0',
      'limit=201',
      'limit=x',
      'type=lambda',
      'cursor=not-a-cursor',
      `team=${'t'.repeat(101)}`,
      `cursor=${'c'.repeat(513)}`,
    ]) {
      const res = await svc.api('GET', `/v1/graph/nodes?${query}`, { token: tenant.member });
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    expect((await svc.api('GET', '/v1/graph/nodes?limit=200', { token: tenant.member })).status).toBe(200);
  });
});

describe('dependency edges', () => {
  it('creates an edge (source depends on target) with its row and audit row', async () => {
    const tenant = await svc.newTenant();
    const ids = await buildGraph(tenant, ['web', 'db'], []);
    const res = await svc.api('POST', '/v1/graph/edges', {
      token: tenant.member,
      body: { sourceServiceId: ids.web, targetServiceId: ids.db },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      edgeId: expect.stringMatching(/^edg_[0-9a-z]{26}$/),
      sourceServiceId: ids.web,
      targetServiceId: ids.db,
      createdAt: expect.any(String),
    });
    const [row] = await svc.database.db.select().from(serviceEdges).where(eq(serviceEdges.id, res.body.edgeId));
    expect(row).toMatchObject({ tenantId: tenant.tenantId, sourceServiceId: ids.web, targetServiceId: ids.db });
    expect(row!.createdAt.toISOString()).toBe(res.body.createdAt);
    const [audit] = await auditFor(res.body.edgeId);
    expect(audit).toMatchObject({
      action: 'service_edge.created',
      targetType: 'service_edge',
      actorId: 'user-member',
      details: { sourceServiceId: ids.web, targetServiceId: ids.db },
    });
    // The reverse edge is another edge: cycles are allowed.
    expect(
      (
        await svc.api('POST', '/v1/graph/edges', {
          token: tenant.admin,
          body: { sourceServiceId: ids.db, targetServiceId: ids.web },
        })
      ).status,
    ).toBe(201);
  });

  it('rejects invalid bodies and self-edges with 400, duplicates with 409, unknown or foreign ends with 404 naming which', async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const ids = await buildGraph(tenant, ['a', 'b'], [['a', 'b']]);
    const theirs = await createNode(other.member, 'theirs');

    for (const body of [
      {},
      { sourceServiceId: ids.a },
      { targetServiceId: ids.b },
      { sourceServiceId: '', targetServiceId: ids.b },
      { sourceServiceId: ids.a, targetServiceId: 5 },
      { sourceServiceId: 's'.repeat(65), targetServiceId: ids.b },
    ]) {
      const res = await svc.api('POST', '/v1/graph/edges', { token: tenant.member, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    const self = await svc.api('POST', '/v1/graph/edges', {
      token: tenant.member,
      body: { sourceServiceId: ids.a, targetServiceId: ids.a },
    });
    expect(self.status).toBe(400);
    expect(self.body).toMatchObject({
      error: 'validation_error',
      details: [{ path: 'targetServiceId', message: 'A service cannot depend on itself' }],
    });

    const duplicate = await svc.api('POST', '/v1/graph/edges', {
      token: tenant.admin,
      body: { sourceServiceId: ids.a, targetServiceId: ids.b },
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toEqual({ error: 'conflict', message: 'This edge already exists' });

    const cases: Array<[Record<string, string>, string[]]> = [
      [{ sourceServiceId: 'svc_nope', targetServiceId: ids.b! }, ['sourceServiceId']],
      [{ sourceServiceId: ids.a!, targetServiceId: theirs.serviceId }, ['targetServiceId']],
      [{ sourceServiceId: theirs.serviceId, targetServiceId: 'svc_nope' }, ['sourceServiceId', 'targetServiceId']],
    ];
    for (const [body, missing] of cases) {
      const res = await svc.api('POST', '/v1/graph/edges', { token: tenant.member, body });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        error: 'not_found',
        message: `No service has the identifier given in ${missing.join(' and ')}`,
        details: missing.map((path) => ({ path, message: 'No service has that identifier' })),
      });
    }
    const edges = await svc.database.db
      .select()
      .from(serviceEdges)
      .where(inArray(serviceEdges.tenantId, [tenant.tenantId, other.tenantId]));
    expect(edges.map((e) => [e.sourceServiceId, e.targetServiceId])).toEqual([[ids.a, ids.b]]);
  });

  it('lists edges newest first with a cursor and a filter on either end; another tenant sees none of them', async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const ids = await buildGraph(
      tenant,
      ['a', 'b', 'c', 'd'],
      [
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'd'],
        ['d', 'b'],
      ],
    );
    const name = Object.fromEntries(Object.entries(ids).map(([k, v]) => [v, k]));
    const pair = (e: { sourceServiceId: string; targetServiceId: string }) =>
      `${name[e.sourceServiceId]}→${name[e.targetServiceId]}`;
    const first = await svc.api('GET', '/v1/graph/edges?limit=3', { token: tenant.member });
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(4);
    expect(first.body.items.map(pair)).toEqual(['d→b', 'c→d', 'b→c']);
    const second = await svc.api('GET', `/v1/graph/edges?limit=3&cursor=${first.body.nextCursor}`, {
      token: tenant.member,
    });
    expect(second.body).toMatchObject({ total: 4, nextCursor: null });
    expect(second.body.items.map(pair)).toEqual(['a→b']);
    const aroundB = await svc.api('GET', `/v1/graph/edges?serviceId=${ids.b}`, { token: tenant.member });
    expect(aroundB.body.items.map(pair)).toEqual(['d→b', 'b→c', 'a→b']);
    expect(aroundB.body.total).toBe(3);
    expect(Object.keys(aroundB.body.items[0]).sort()).toEqual([
      'createdAt',
      'edgeId',
      'sourceServiceId',
      'targetServiceId',
    ]);

    const theirs = await svc.api('GET', '/v1/graph/edges', { token: other.member });
    expect(theirs.body).toEqual({ items: [], total: 0, nextCursor: null });
    const theirsFiltered = await svc.api('GET', `/v1/graph/edges?serviceId=${ids.b}`, { token: other.member });
    expect(theirsFiltered.body).toEqual({ items: [], total: 0, nextCursor: null });
    const theirNodes = await svc.api('GET', '/v1/graph/nodes', { token: other.member });
    expect(theirNodes.body).toEqual({ items: [], total: 0, nextCursor: null });

    for (const query of ['limit=0', 'limit=201', 'cursor=bad', `serviceId=${'s'.repeat(65)}`]) {
      const res = await svc.api('GET', `/v1/graph/edges?${query}`, { token: tenant.member });
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
  });

  it("deletes an edge with 204 and an audit row; an unknown or another tenant's edge is 404", async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const ids = await buildGraph(tenant, ['a', 'b'], []);
    const edgeId = await createEdge(tenant.member, ids.a!, ids.b!);
    for (const [token, id] of [
      [other.admin, edgeId],
      [tenant.member, 'edg_nope'],
    ] as const) {
      const res = await svc.api('DELETE', `/v1/graph/edges/${id}`, { token });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found', message: 'No edge has that identifier' });
    }
    expect(await svc.database.db.select().from(serviceEdges).where(eq(serviceEdges.id, edgeId))).toHaveLength(1);
    const removed = await svc.api('DELETE', `/v1/graph/edges/${edgeId}`, { token: tenant.member });
    expect(removed.status).toBe(204);
    expect(await svc.database.db.select().from(serviceEdges).where(eq(serviceEdges.id, edgeId))).toEqual([]);
    expect((await auditFor(edgeId)).map((a) => [a.action, a.details])).toEqual([
      ['service_edge.created', { sourceServiceId: ids.a, targetServiceId: ids.b }],
      ['service_edge.deleted', { sourceServiceId: ids.a, targetServiceId: ids.b }],
    ]);
    expect((await svc.api('DELETE', `/v1/graph/edges/${edgeId}`, { token: tenant.member })).status).toBe(404);
    expect((await svc.api('DELETE', `/v1/graph/edges/${'e'.repeat(65)}`, { token: tenant.member })).status).toBe(400);
    // The nodes stay.
    const nodes = await svc.database.db
      .select()
      .from(services)
      .where(or(eq(services.id, ids.a!), eq(services.id, ids.b!)));
    expect(nodes).toHaveLength(2);
  });
});

describe('roles', () => {
  it('lets admins and members use every topology endpoint, a token without a known role gets 403 and none gets 401', async () => {
    const tenant = await svc.newTenant();
    const ids = await buildGraph(tenant, ['a', 'b'], [['a', 'b']]);
    const [edge] = await svc.database.db.select().from(serviceEdges).where(eq(serviceEdges.tenantId, tenant.tenantId));
    const viewer = tokenWithRoles(tenant.tenantId, ['viewer']);
    const calls: Array<[string, string, unknown?]> = [
      ['POST', '/v1/graph/nodes', { name: 'c', type: 'api' }],
      ['GET', '/v1/graph/nodes'],
      ['GET', `/v1/graph/nodes/${ids.a}`],
      ['PATCH', `/v1/graph/nodes/${ids.a}`, { criticality: 2 }],
      ['DELETE', `/v1/graph/nodes/${ids.a}`],
      ['POST', '/v1/graph/edges', { sourceServiceId: ids.b, targetServiceId: ids.a }],
      ['GET', '/v1/graph/edges'],
      ['DELETE', `/v1/graph/edges/${edge!.id}`],
      ['GET', `/v1/graph/blast-radius/${ids.b}`],
    ];
    for (const [method, path, body] of calls) {
      const forbidden = await svc.api(method, path, { token: viewer, ...(body ? { body } : {}) });
      expect(forbidden.status, `${method} ${path}`).toBe(403);
      expect(forbidden.body.error).toBe('forbidden');
      const anonymous = await svc.api(method, path, body ? { body } : {});
      expect(anonymous.status, `${method} ${path}`).toBe(401);
      expect(anonymous.body.error).toBe('unauthorized');
    }
    // Nothing changed.
    expect(await svc.database.db.select().from(services).where(eq(services.tenantId, tenant.tenantId))).toHaveLength(2);
    expect(
      await svc.database.db.select().from(serviceEdges).where(eq(serviceEdges.tenantId, tenant.tenantId)),
    ).toHaveLength(1);

    const expected = [201, 200, 200, 200, 204, 201, 200, 204, 200];
    for (const token of [tenant.member, tenant.admin]) {
      const fresh = await buildGraph(tenant, [`a-${token === tenant.admin}`, `b-${token === tenant.admin}`], []);
      const [x, y] = Object.values(fresh) as [string, string];
      const edgeId = await createEdge(tenant.member, x, y);
      const statuses = [];
      for (const [method, path, body] of [
        ['POST', '/v1/graph/nodes', { name: `c-${token === tenant.admin}`, type: 'api' }],
        ['GET', '/v1/graph/nodes'],
        ['GET', `/v1/graph/nodes/${y}`],
        ['PATCH', `/v1/graph/nodes/${y}`, { criticality: 2 }],
        ['DELETE', `/v1/graph/edges/${edgeId}`],
        ['POST', '/v1/graph/edges', { sourceServiceId: y, targetServiceId: x }],
        ['GET', '/v1/graph/edges'],
        ['DELETE', `/v1/graph/nodes/${y}`],
        ['GET', `/v1/graph/blast-radius/${x}`],
      ] as Array<[string, string, unknown?]>) {
        statuses.push((await svc.api(method, path, { token, ...(body ? { body } : {}) })).status);
      }
      expect(statuses).toEqual(expected);
    }
  });
});

describe('blast radius', () => {
  it('follows a chain a←b←c←d with hops 1, 2, 3 and the impact of each', async () => {
    const tenant = await svc.newTenant();
    // b depends on a, c on b, d on c: a failure of a reaches b, then c, then d.
    const ids = await buildGraph(
      tenant,
      ['a', 'b', 'c', 'd'],
      [
        ['b', 'a'],
        ['c', 'b'],
        ['d', 'c'],
      ],
      { a: 10, b: 1, c: 1, d: 4 },
    );
    const result = await blast(tenant, ids.a!);
    expect(result).toEqual({
      serviceId: ids.a,
      affectedServices: [
        { serviceId: ids.b, name: 'b', hops: 1, impact: 'high' },
        { serviceId: ids.c, name: 'c', hops: 2, impact: 'medium' },
        { serviceId: ids.d, name: 'd', hops: 3, impact: 'low' },
      ],
      totalAffected: 3,
    });
    // Edges are walked backwards only: d's failure affects nobody, c's affects d.
    expect(await blast(tenant, ids.d!)).toEqual({ serviceId: ids.d, affectedServices: [], totalAffected: 0 });
    expect(summary(await blast(tenant, ids.c!))).toEqual([['d', 1, 'high']]);
  });

  it('gives the shortest distance in a diamond with paths of different lengths, and lists each service once', async () => {
    const tenant = await svc.newTenant();
    // top → left → db and top → right → mid → db: top is 2 hops from db, not 3.
    const ids = await buildGraph(
      tenant,
      ['db', 'left', 'mid', 'right', 'top'],
      [
        ['left', 'db'],
        ['mid', 'db'],
        ['right', 'mid'],
        ['top', 'left'],
        ['top', 'right'],
      ],
      { db: 1, left: 1, mid: 1, right: 1, top: 1 },
    );
    const result = await blast(tenant, ids.db!);
    expect(summary(result)).toEqual([
      ['left', 1, 'high'],
      ['mid', 1, 'high'],
      ['right', 2, 'medium'],
      ['top', 2, 'medium'],
    ]);
    expect(result.totalAffected).toBe(4);
    expect(result.affectedServices.map((a) => a.serviceId)).toEqual([ids.left, ids.mid, ids.right, ids.top]);
    // Adding a direct edge makes top one hop away.
    await createEdge(tenant.member, ids.top!, ids.db!);
    expect(summary(await blast(tenant, ids.db!))).toEqual([
      ['left', 1, 'high'],
      ['mid', 1, 'high'],
      ['top', 1, 'high'],
      ['right', 2, 'medium'],
    ]);
  });

  it('terminates on a cycle a→b→c→a, listing each service once and never the failed service itself', async () => {
    const tenant = await svc.newTenant();
    const ids = await buildGraph(
      tenant,
      ['a', 'b', 'c', 'tail'],
      [
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'a'],
        ['tail', 'b'],
      ],
      { a: 1, b: 1, c: 1, tail: 1 },
    );
    // Who depends on a: c (1 hop); on c: b (2 hops); on b: a (the failed service) and tail (3 hops).
    expect(await blast(tenant, ids.a!)).toEqual({
      serviceId: ids.a,
      affectedServices: [
        { serviceId: ids.c, name: 'c', hops: 1, impact: 'high' },
        { serviceId: ids.b, name: 'b', hops: 2, impact: 'medium' },
        { serviceId: ids.tail, name: 'tail', hops: 3, impact: 'low' },
      ],
      totalAffected: 3,
    });
    expect(summary(await blast(tenant, ids.b!))).toEqual([
      ['a', 1, 'high'],
      ['tail', 1, 'high'],
      ['c', 2, 'medium'],
    ]);
    // A two-node cycle.
    await createEdge(tenant.member, ids.b!, ids.a!);
    expect(summary(await blast(tenant, ids.a!))).toEqual([
      ['b', 1, 'high'],
      ['c', 1, 'high'],
      ['tail', 2, 'medium'],
    ]);
  });

  it('rates impact by hops or criticality: ≥ 8 is high and 5–7 medium at any distance, below 5 low beyond two hops', async () => {
    const tenant = await svc.newTenant();
    const far = { c10: 10, c8: 8, c7: 7, c5: 5, c4: 4, c1: 1 };
    const ids = await buildGraph(
      tenant,
      ['root', 'near', 'mid-low', 'mid-high', ...Object.keys(far), 'farther'],
      [
        ['near', 'root'],
        ['mid-low', 'near'],
        ['mid-high', 'near'],
        ...Object.keys(far).map((name): [string, string] => [name, 'mid-low']),
        ['farther', 'c1'],
      ],
      { root: 5, near: 1, 'mid-low': 1, 'mid-high': 9, ...far, farther: 8 },
    );
    expect(summary(await blast(tenant, ids.root!))).toEqual([
      ['near', 1, 'high'],
      ['mid-high', 2, 'high'],
      ['mid-low', 2, 'medium'],
      ['c10', 3, 'high'],
      ['c8', 3, 'high'],
      ['c5', 3, 'medium'],
      ['c7', 3, 'medium'],
      ['c1', 3, 'low'],
      ['c4', 3, 'low'],
      ['farther', 4, 'high'],
    ]);
    // Impact follows a criticality change.
    await svc.api('PATCH', `/v1/graph/nodes/${ids.c1}`, { token: tenant.member, body: { criticality: 6 } });
    const changed = await blast(tenant, ids.root!);
    expect(changed.affectedServices.find((a) => a.name === 'c1')).toMatchObject({ hops: 3, impact: 'medium' });
  });

  it('answers an empty list for an isolated node and for a node nothing depends on', async () => {
    const tenant = await svc.newTenant();
    const ids = await buildGraph(tenant, ['alone', 'leaf', 'base'], [['leaf', 'base']]);
    expect(await blast(tenant, ids.alone!)).toEqual({ serviceId: ids.alone, affectedServices: [], totalAffected: 0 });
    expect(await blast(tenant, ids.leaf!)).toEqual({ serviceId: ids.leaf, affectedServices: [], totalAffected: 0 });
  });

  it("is 404 for an unknown or another tenant's service, and never reaches into another tenant's graph", async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const ids = await buildGraph(tenant, ['db', 'api'], [['api', 'db']]);
    // The other tenant has the same names, its own graph around them.
    const theirs = await buildGraph(
      other,
      ['db', 'api', 'extra'],
      [
        ['api', 'db'],
        ['extra', 'db'],
      ],
    );
    for (const [token, id] of [
      [tenant.member, 'svc_nope'],
      [other.member, ids.db],
      [tenant.admin, theirs.db],
    ] as const) {
      const res = await svc.api('GET', `/v1/graph/blast-radius/${id}`, { token });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found', message: 'No service has that identifier' });
    }
    expect(summary(await blast(tenant, ids.db!))).toEqual([['api', 1, 'high']]);
    expect(summary(await blast(other, theirs.db!))).toEqual([
      ['api', 1, 'high'],
      ['extra', 1, 'high'],
    ]);
    const long = await svc.api('GET', `/v1/graph/blast-radius/${'s'.repeat(65)}`, { token: tenant.member });
    expect(long.status).toBe(400);
  });

  it('forgets a deleted service and the paths through it', async () => {
    const tenant = await svc.newTenant();
    const ids = await buildGraph(
      tenant,
      ['db', 'api', 'web'],
      [
        ['api', 'db'],
        ['web', 'api'],
      ],
    );
    expect(summary(await blast(tenant, ids.db!))).toEqual([
      ['api', 1, 'high'],
      ['web', 2, 'medium'],
    ]);
    expect((await svc.api('DELETE', `/v1/graph/nodes/${ids.api}`, { token: tenant.member })).status).toBe(204);
    expect(await blast(tenant, ids.db!)).toEqual({ serviceId: ids.db, affectedServices: [], totalAffected: 0 });
  });

  it('never answers from a cached graph that changed: api edits and direct writes alike', async () => {
    const tenant = await svc.newTenant();
    const ids = await buildGraph(
      tenant,
      ['db', 'api', 'web', 'batch'],
      [
        ['api', 'db'],
        ['web', 'api'],
      ],
    );
    const first = summary(await blast(tenant, ids.db!));
    expect(first).toEqual([
      ['api', 1, 'high'],
      ['web', 2, 'medium'],
    ]);
    expect(summary(await blast(tenant, ids.db!))).toEqual(first); // answered again, unchanged
    const edge = await createEdge(tenant.member, ids.batch!, ids.web!);
    expect(summary(await blast(tenant, ids.db!))).toEqual([...first, ['batch', 3, 'medium']]);
    await svc.api('PATCH', `/v1/graph/nodes/${ids.batch}`, { token: tenant.member, body: { criticality: 2 } });
    expect(summary(await blast(tenant, ids.db!))).toEqual([...first, ['batch', 3, 'low']]);
    expect((await svc.api('DELETE', `/v1/graph/edges/${edge}`, { token: tenant.member })).status).toBe(204);
    expect(summary(await blast(tenant, ids.db!))).toEqual(first);
    // A write that bypasses the api (a migration, an operator's SQL) is seen too.
    await svc.database.db.insert(serviceEdges).values({
      id: `edg_direct_${Date.now()}`,
      tenantId: tenant.tenantId,
      sourceServiceId: ids.batch!,
      targetServiceId: ids.db!,
    });
    expect(summary(await blast(tenant, ids.db!))).toEqual([
      ['api', 1, 'high'],
      ['batch', 1, 'high'],
      ['web', 2, 'medium'],
    ]);
    await svc.database.db.update(services).set({ name: 'api-renamed' }).where(eq(services.id, ids.api!));
    expect(summary(await blast(tenant, ids.db!))[0]).toEqual(['api-renamed', 1, 'high']);
    // Another tenant's changes leave this tenant's answers alone, and are not mixed in.
    const other = await svc.newTenant();
    await buildGraph(other, ['db'], []);
    expect(summary(await blast(tenant, ids.db!))).toHaveLength(3);
  });
});
