/**
 * Topology nodes name the repositories (and paths in shared ones) whose changes affect them:
 * `repositories` on POST/PATCH /v1/graph/nodes and in every node response, validated.
 */
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { services } from '../../src/db/schema/topology.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant();
});
afterAll(() => svc?.stop());

const checkoutRepos = [
  { repository: 'acme/checkout' },
  { repository: 'acme/platform-config', paths: ['apps/checkout/**', 'charts/checkout/**'] },
];

describe('repositories of a service node', () => {
  it('are stored on POST, answered by POST, GET and the list, and replaced or cleared by PATCH', async () => {
    const created = await svc.api('POST', '/v1/graph/nodes', {
      token: tenant.member,
      body: { name: 'checkout', type: 'api', repositories: checkoutRepos },
    });
    expect(created.status).toBe(201);
    expect(created.body.repositories).toEqual(checkoutRepos);
    const id = created.body.serviceId as string;
    const [row] = await svc.database.db
      .select()
      .from(services)
      .where(and(eq(services.tenantId, tenant.tenantId), eq(services.id, id)));
    expect(row!.repositories).toEqual(checkoutRepos);

    const got = await svc.api('GET', `/v1/graph/nodes/${id}`, { token: tenant.member });
    expect(got.body.repositories).toEqual(checkoutRepos);
    const list = await svc.api('GET', '/v1/graph/nodes', { token: tenant.member });
    expect(list.body.items.find((n: { serviceId: string }) => n.serviceId === id).repositories).toEqual(checkoutRepos);

    const patched = await svc.api('PATCH', `/v1/graph/nodes/${id}`, {
      token: tenant.member,
      body: { repositories: [{ repository: 'acme/checkout-v2' }] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'checkout', repositories: [{ repository: 'acme/checkout-v2' }] });
    const teamOnly = await svc.api('PATCH', `/v1/graph/nodes/${id}`, { token: tenant.member, body: { team: 'shop' } });
    expect(teamOnly.body.repositories).toEqual([{ repository: 'acme/checkout-v2' }]);
    const cleared = await svc.api('PATCH', `/v1/graph/nodes/${id}`, {
      token: tenant.member,
      body: { repositories: [] },
    });
    expect(cleared.body.repositories).toEqual([]);
  });

  it('default to none', async () => {
    const res = await svc.api('POST', '/v1/graph/nodes', { token: tenant.member, body: { name: 'cart', type: 'api' } });
    expect(res.status).toBe(201);
    expect(res.body.repositories).toEqual([]);
  });

  it('are another tenant’s to read only in that tenant', async () => {
    const other = await svc.newTenant();
    const res = await svc.api('POST', '/v1/graph/nodes', {
      token: other.member,
      body: { name: 'checkout', type: 'api', repositories: [{ repository: 'other/checkout' }] },
    });
    expect(res.status).toBe(201);
    const mine = await svc.api('GET', `/v1/graph/nodes/${res.body.serviceId}`, { token: tenant.member });
    expect(mine.status).toBe(404);
  });

  it.each([
    ['not owner/name', [{ repository: 'checkout' }], '0.repository', /owner\/name/],
    ['a URL', [{ repository: 'https://github.com/acme/checkout' }], '0.repository', /owner\/name/],
    ['too long', [{ repository: `acme/${'x'.repeat(200)}` }], '0.repository', /200/],
    ['an unknown field', [{ repository: 'acme/a', branch: 'main' }], '0', /branch|unrecognized/i],
    ['an empty glob list', [{ repository: 'acme/a', paths: [] }], '0.paths', /at least one glob/],
    ['an absolute glob', [{ repository: 'acme/a', paths: ['/apps/a/**'] }], '0.paths.0', /relative/],
    ['a blank glob', [{ repository: 'acme/a', paths: ['  '] }], '0.paths.0', /empty|blank/],
    [
      '21 globs',
      [{ repository: 'acme/a', paths: Array.from({ length: 21 }, (_, i) => `apps/${i}/**`) }],
      '0.paths',
      /at most 20 path globs/,
    ],
    [
      '21 repositories',
      Array.from({ length: 21 }, (_, i) => ({ repository: `acme/r${i}` })),
      '',
      /at most 20 repositories/,
    ],
    ['a repository twice', [{ repository: 'acme/a' }, { repository: 'ACME/a' }], '', /once/],
  ])('refuses %s with a 400 naming the field', async (_what, repositories, at, message) => {
    for (const [method, path, body] of [
      ['POST', '/v1/graph/nodes', { name: `bad-${Math.random().toString(36).slice(2)}`, type: 'api', repositories }],
      ['PATCH', `/v1/graph/nodes/svc_missing`, { repositories }],
    ] as const) {
      const res = await svc.api(method, path, { token: tenant.member, body });
      expect(res.status, `${method} ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error).toBe('validation_error');
      const detail = res.body.details.find((d: { path: string }) => d.path === `repositories${at ? `.${at}` : ''}`);
      expect(detail, JSON.stringify(res.body.details)).toBeDefined();
      expect(detail.message).toMatch(message);
    }
  });
});
