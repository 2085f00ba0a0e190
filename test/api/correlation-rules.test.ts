import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RULES_PER_TENANT } from '../../src/db/repositories/correlation-rules.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { correlationRules } from '../../src/db/schema/correlation.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { newId } from '../../src/ids.js';
import { expectConformsToDocument } from '../helpers/openapi-conformance.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
type Tenant = { tenantId: string; admin: string; member: string };
let t: Tenant;
let other: Tenant;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
  [t, other] = await Promise.all([svc.newTenant(), svc.newTenant()]);
});
afterAll(() => svc?.stop());

const base = '/v1/correlation-rules';
const create = (tenant: Tenant, body: unknown) => svc.api('POST', base, { token: tenant.admin, body });
const DAY = 86_400_000;
let seq = 0;
const uniqueName = (prefix = 'rule') => `${prefix} ${++seq}`;

async function auditOf(tenantId: string, targetId: string) {
  return svc.database.db
    .select()
    .from(auditLog)
    .where(and(eq(auditLog.tenantId, tenantId), eq(auditLog.targetId, targetId)))
    .orderBy(auditLog.seq);
}

describe('correlation rule CRUD', () => {
  it('creates with defaults, reads, changes and deletes a rule; every write audited', async () => {
    const created = await create(t, { name: 'checkout storm', match: { service: 'checkout' } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      ruleId: expect.stringMatching(/^crl_[0-9a-z]{26}$/),
      name: 'checkout storm',
      enabled: true,
      order: 100,
      match: { service: 'checkout' },
      groupBy: [],
      minAlerts: 1,
      forMinutes: 0,
      action: 'group',
      activeFrom: null,
      activeUntil: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      lastMatchedAt: null,
      matchCount: 0,
      stale: false,
    });
    await expectConformsToDocument(svc, base, 'post', 201, created.body);
    const { ruleId } = created.body;
    const [row] = await svc.database.db.select().from(correlationRules).where(eq(correlationRules.id, ruleId));
    expect(row).toMatchObject({ tenantId: t.tenantId, name: 'checkout storm', action: 'group', order: 100 });

    const read = await svc.api('GET', `${base}/${ruleId}`, { token: t.member });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
    await expectConformsToDocument(svc, `${base}/{ruleId}`, 'get', 200, read.body);

    const changed = await svc.api('PATCH', `${base}/${ruleId}`, {
      token: t.admin,
      body: {
        match: { alertName: 'Kube*', labels: { cluster: 'eu-?' }, severity: ['critical', 'high'] },
        groupBy: ['cluster'],
        minAlerts: 3,
        forMinutes: 5,
        order: 10,
        enabled: false,
      },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      ruleId,
      name: 'checkout storm',
      enabled: false,
      order: 10,
      // A given match replaces the whole match: the service criterion is gone.
      match: { alertName: 'Kube*', labels: { cluster: 'eu-?' }, severity: ['critical', 'high'] },
      groupBy: ['cluster'],
      minAlerts: 3,
      forMinutes: 5,
      action: 'group',
    });
    expect(changed.body.match).not.toHaveProperty('service');
    expect(Date.parse(changed.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.updatedAt));
    await expectConformsToDocument(svc, `${base}/{ruleId}`, 'patch', 200, changed.body);

    const window = await svc.api('PATCH', `${base}/${ruleId}`, {
      token: t.admin,
      body: { action: 'suppress', activeFrom: '2026-11-01T02:00:00+01:00', activeUntil: '2026-11-01T04:00:00Z' },
    });
    expect(window.status).toBe(200);
    expect(window.body).toMatchObject({
      action: 'suppress',
      activeFrom: '2026-11-01T01:00:00.000Z',
      activeUntil: '2026-11-01T04:00:00.000Z',
    });
    const cleared = await svc.api('PATCH', `${base}/${ruleId}`, {
      token: t.admin,
      body: { activeFrom: null, activeUntil: null },
    });
    expect(cleared.body).toMatchObject({ activeFrom: null, activeUntil: null, action: 'suppress' });

    const removed = await svc.api('DELETE', `${base}/${ruleId}`, { token: t.admin });
    expect(removed.status).toBe(204);
    expect((await svc.api('GET', `${base}/${ruleId}`, { token: t.admin })).status).toBe(404);
    expect((await svc.api('DELETE', `${base}/${ruleId}`, { token: t.admin })).status).toBe(404);
    expect(await svc.database.db.select().from(correlationRules).where(eq(correlationRules.id, ruleId))).toEqual([]);

    const audit = await auditOf(t.tenantId, ruleId);
    const updated = 'correlation_rule.updated';
    expect(audit.map((a) => a.action)).toEqual([
      'correlation_rule.created',
      updated,
      updated,
      updated,
      'correlation_rule.deleted',
    ]);
    expect(new Set(audit.map((a) => `${a.targetType} ${a.actorType}`))).toEqual(new Set(['correlation_rule user']));
    expect(audit[0]!.details).toMatchObject({ name: 'checkout storm', action: 'group' });
    expect(audit[1]!.details).toEqual({ fields: ['enabled', 'order', 'match', 'groupBy', 'minAlerts', 'forMinutes'] });
    expect(audit[4]!.details).toEqual({ name: 'checkout storm' });
  });

  it('takes every field at creation', async () => {
    const match = {
      provider: 'alertmanager',
      service: 'db',
      alertName: 'Pg?Down*',
      labels: { r: 'eu-*' },
      severity: ['low'],
    };
    const window = { activeFrom: '2026-11-01T02:00:00.000Z', activeUntil: '2026-11-01T04:00:00.500Z' };
    const body = {
      name: 'all fields',
      enabled: false,
      order: 0,
      match,
      groupBy: ['r', 'c'],
      minAlerts: 1000,
      forMinutes: 1440,
    };
    const res = await create(t, { ...body, action: 'suppress', ...window });
    expect([res.status, res.body]).toEqual([201, expect.objectContaining({ ...body, action: 'suppress', ...window })]);
    const separate = await create(t, { name: uniqueName(), match: { severity: ['high'] }, action: 'open_separately' });
    expect(separate.body.action).toBe('open_separately');
  });

  it('lists in evaluation order (order, then creation) with cursor pages, filters and totals', async () => {
    const tenant = await svc.newTenant();
    const ids: string[] = [];
    for (const [name, order, enabled] of [
      ['late', 300, true],
      ['first', 5, true],
      ['mid a', 100, false],
      ['mid b', 100, true],
      ['mid c', 100, true],
    ] as const) {
      const res = await create(tenant, { name, order, enabled, match: { provider: 'grafana' } });
      expect(res.status).toBe(201);
      ids.push(res.body.ruleId);
    }
    const all = await svc.api('GET', `${base}?limit=200`, { token: tenant.member });
    expect(all.status).toBe(200);
    expect(all.body.items.map((r: { name: string }) => r.name)).toEqual(['first', 'mid a', 'mid b', 'mid c', 'late']);
    expect(all.body).toMatchObject({ total: 5, nextCursor: null });
    await expectConformsToDocument(svc, base, 'get', 200, all.body);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { status: number; body: any } = await svc.api(
        'GET',
        `${base}?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        {
          token: tenant.member,
        },
      );
      expect(page.status).toBe(200);
      expect(page.body.total).toBe(5);
      seen.push(...page.body.items.map((r: { name: string }) => r.name));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(['first', 'mid a', 'mid b', 'mid c', 'late']);

    const enabled = await svc.api('GET', `${base}?enabled=false`, { token: tenant.member });
    expect(enabled.body.items.map((r: { name: string }) => r.name)).toEqual(['mid a']);
    expect(enabled.body.total).toBe(1);

    for (const bad of ['limit=0', 'limit=201', 'limit=1.5', 'cursor=%%%', 'cursor=bm90LWpzb24', 'enabled=yes']) {
      const res = await svc.api('GET', `${base}?${bad}`, { token: tenant.member });
      expect([res.status, res.body.error], bad).toEqual([400, 'validation_error']);
    }
    // A cursor of another list (the keyset of created_at and id) is not a rules cursor.
    const triggerCursor = Buffer.from(JSON.stringify([new Date().toISOString(), ids[0], 'desc'])).toString('base64url');
    expect((await svc.api('GET', `${base}?cursor=${triggerCursor}`, { token: tenant.member })).status).toBe(400);
  });

  it('lets members read but not write; admins do both', async () => {
    const res = await create(t, { name: uniqueName(), match: { provider: 'sentry' } });
    const { ruleId } = res.body;
    expect(
      (await svc.api('POST', base, { token: t.member, body: { name: 'x', match: { provider: 'sentry' } } })).status,
    ).toBe(403);
    const patch = await svc.api('PATCH', `${base}/${ruleId}`, { token: t.member, body: { enabled: false } });
    expect([patch.status, patch.body.error]).toEqual([403, 'forbidden']);
    expect((await svc.api('DELETE', `${base}/${ruleId}`, { token: t.member })).status).toBe(403);
    expect((await svc.api('GET', `${base}/${ruleId}`, { token: t.member })).status).toBe(200);
    expect((await svc.api('GET', base, { token: t.member })).status).toBe(200);
    expect((await svc.api('GET', base)).status).toBe(401);
    const [row] = await svc.database.db.select().from(correlationRules).where(eq(correlationRules.id, ruleId));
    expect(row!.enabled).toBe(true);
  });
});

describe('correlation rule validation', () => {
  const valid = { name: 'valid', match: { provider: 'alertmanager' } };
  const manyLabels = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`l${i}`, 'v']));

  const bad: Array<[string, ...Array<Record<string, unknown>>]> = [
    ['name', { name: undefined }, { name: '' }, { name: 'x'.repeat(201) }, { name: 'two\nlines' }],
    ['match', { match: undefined }, { match: {} }, { match: { labels: {} } }, { match: 'everything' }],
    ['match.provider', { match: { provider: 'nagios' } }],
    ['match.service', { match: { service: '' } }],
    ...['', 'x'.repeat(501), 'a\nb*', '   '].map(
      (alertName) => ['match.alertName', { match: { alertName } }] as [string, Record<string, unknown>],
    ),
    ['match.labels.cluster', { match: { labels: { cluster: '' } } }, { match: { labels: { cluster: 7 } } }],
    ...[manyLabels, { '': 'x' }, { ['x'.repeat(201)]: 'v' }, { 'a\nb': 'v' }].map(
      (labels) => ['match.labels', { match: { labels } }] as [string, Record<string, unknown>],
    ),
    [
      'match.severity',
      { match: { severity: [] } },
      { match: { severity: 'critical' } },
      { match: { severity: ['critical', 'critical'] } },
    ],
    ['match.severity.0', { match: { severity: ['urgent'] } }],
    ['match.zz_unknown', { match: { provider: 'grafana', zz_unknown: true } }],
    ['groupBy', { groupBy: Array.from({ length: 11 }, (_, i) => `l${i}`) }, { groupBy: ['a', 'a'] }, { groupBy: 'a' }],
    ['groupBy.0', { groupBy: [''] }],
    ['minAlerts', { minAlerts: 0 }, { minAlerts: 1001 }, { minAlerts: 2.5 }, { minAlerts: '3' }],
    ['forMinutes', { forMinutes: -1 }, { forMinutes: 1441 }],
    ['order', { order: -1 }, { order: 10001 }],
    ['action', { action: 'page' }],
    ['enabled', { enabled: 'yes' }],
    ['activeFrom', { activeFrom: 'tomorrow' }, { activeFrom: '2026-11-01T02:00:00' }],
    [
      'activeUntil',
      { activeUntil: '10000-01-01T00:00:00Z' },
      { activeFrom: '2026-11-01T04:00:00Z', activeUntil: '2026-11-01T02:00:00Z' },
      { activeFrom: '2026-11-01T04:00:00Z', activeUntil: '2026-11-01T04:00:00Z' },
    ],
    ['zz_unknown', { zz_unknown: 1 }],
  ];

  it.each(bad)('refuses a bad %s with 400 naming it', async (field, ...changes) => {
    for (const change of changes) {
      const res = await create(t, { ...valid, ...change });
      expect([res.status, res.body.error], JSON.stringify(change)).toEqual([400, 'validation_error']);
      const paths = (res.body.details as Array<{ path: string; message: string }>).map((d) =>
        d.message.includes('zz_unknown') ? `${d.path ? `${d.path}.` : ''}zz_unknown` : d.path,
      );
      expect(paths, JSON.stringify(res.body)).toContain(field);
    }
  });

  it('says why a match without criteria is refused', async () => {
    const res = await create(t, { name: 'everything', match: {} });
    expect(res.body.message).toMatch(/at least one criterion/);
    expect(res.body.message).toMatch(/would match every alert/);
    expect(
      await svc.database.db.select().from(correlationRules).where(eq(correlationRules.name, 'everything')),
    ).toEqual([]);
  });

  it('refuses a bad PATCH naming the field, judging a window against the bound kept', async () => {
    const res = await create(t, {
      name: uniqueName('window'),
      match: { provider: 'datadog' },
      activeFrom: '2026-11-01T02:00:00Z',
    });
    const path = `${base}/${res.body.ruleId}`;
    const cases: Array<[string, unknown]> = [
      ['', {}],
      ['match', { match: {} }],
      ['match.alertName', { match: { alertName: '' } }],
      ['minAlerts', { minAlerts: 0 }],
      ['activeUntil', { activeUntil: '2026-11-01T01:00:00Z' }],
      ['activeFrom', { activeFrom: 'soon' }],
    ];
    for (const [field, body] of cases) {
      const patch = await svc.api('PATCH', path, { token: t.admin, body });
      expect([patch.status, patch.body.error], JSON.stringify(body)).toEqual([400, 'validation_error']);
      if (field)
        expect(
          patch.body.details.map((d: { path: string }) => d.path),
          JSON.stringify(body),
        ).toContain(field);
    }
    // The kept activeUntil judged against a new activeFrom.
    await svc.api('PATCH', path, { token: t.admin, body: { activeUntil: '2026-11-01T05:00:00Z' } });
    const late = await svc.api('PATCH', path, { token: t.admin, body: { activeFrom: '2026-11-01T06:00:00Z' } });
    expect(late.status).toBe(400);
    expect(late.body.details).toEqual([{ path: 'activeFrom', message: 'activeUntil must be after activeFrom' }]);
    const after = await svc.api('GET', path, { token: t.admin });
    expect(after.body).toMatchObject({
      activeFrom: '2026-11-01T02:00:00.000Z',
      activeUntil: '2026-11-01T05:00:00.000Z',
    });
    const unknownRule = await svc.api('PATCH', `${base}/crl_000000000000000000000`, { token: t.admin, body: {} });
    expect(unknownRule.status).toBe(400); // the body is judged before the row is looked up
  });
});

describe('correlation rule names and the cap', () => {
  it('keeps names unique per tenant: 409 on create and rename, the same name free in another tenant', async () => {
    const name = uniqueName('unique');
    const first = await create(t, { name, match: { provider: 'github' } });
    expect(first.status).toBe(201);
    const again = await create(t, { name, match: { provider: 'grafana' } });
    expect([again.status, again.body.error]).toEqual([409, 'conflict']);
    expect(again.body.message).toContain(name);
    expect((await create(other, { name, match: { provider: 'github' } })).status).toBe(201);

    const second = await create(t, { name: uniqueName('unique'), match: { provider: 'github' } });
    const rename = await svc.api('PATCH', `${base}/${second.body.ruleId}`, { token: t.admin, body: { name } });
    expect([rename.status, rename.body.error]).toEqual([409, 'conflict']);
    const same = await svc.api('PATCH', `${base}/${first.body.ruleId}`, { token: t.admin, body: { name, order: 7 } });
    expect(same.status).toBe(200);
  });

  it(`holds at most ${MAX_RULES_PER_TENANT} rules per tenant, also under concurrent creations`, async () => {
    const tenant = await svc.newTenant();
    await svc.database.db.insert(correlationRules).values(
      Array.from({ length: MAX_RULES_PER_TENANT - 3 }, (_, i) => ({
        id: newId('crl'),
        tenantId: tenant.tenantId,
        name: `bulk ${i}`,
        match: { provider: 'generic' },
      })),
    );
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => create(tenant, { name: `race ${i}`, match: { provider: 'generic' } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 409, 409, 409]);
    const refused = results.find((r) => r.status === 409)!;
    expect(refused.body.error).toBe('conflict');
    expect(refused.body.message).toContain(`at most ${MAX_RULES_PER_TENANT} correlation rules`);
    const list = await svc.api('GET', `${base}?limit=1`, { token: tenant.member });
    expect(list.body.total).toBe(MAX_RULES_PER_TENANT);
    // Deleting one makes room again.
    await svc.api('DELETE', `${base}/${list.body.items[0].ruleId}`, { token: tenant.admin });
    expect((await create(tenant, { name: 'room again', match: { provider: 'generic' } })).status).toBe(201);
  });
});

describe('correlation rule tenant isolation', () => {
  it("answers 404 for another tenant's rule, and lists only the caller's", async () => {
    const mine = await create(t, { name: uniqueName('isolated'), match: { provider: 'sentry' } });
    const id = mine.body.ruleId;
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { enabled: false }],
      ['DELETE', undefined],
    ] as const) {
      const res = await svc.api(method, `${base}/${id}`, { token: other.admin, ...(body ? { body } : {}) });
      expect([res.status, res.body.error], method).toEqual([404, 'not_found']);
    }
    const [row] = await svc.database.db.select().from(correlationRules).where(eq(correlationRules.id, id));
    expect(row!.enabled).toBe(true);
    const list = await svc.api('GET', `${base}?limit=200`, { token: other.member });
    expect(list.body.items.map((r: { ruleId: string }) => r.ruleId)).not.toContain(id);
  });
});

describe('staleness and match counts', () => {
  it('flags an enabled rule older than 7 days that has not matched in 7 days; counts matches', async () => {
    const tenant = await svc.newTenant();
    const make = async (name: string, enabled = true) =>
      (await create(tenant, { name, enabled, match: { alertName: 'Disk*' } })).body.ruleId as string;
    const [oldQuiet, oldDisabled, young, oldMatched] = [
      await make('old quiet'),
      await make('old disabled', false),
      await make('young'),
      await make('old matched'),
    ];
    const eightDaysAgo = new Date(Date.now() - 8 * DAY);
    for (const id of [oldQuiet, oldDisabled, oldMatched]) {
      await svc.database.db
        .update(correlationRules)
        .set({ createdAt: eightDaysAgo })
        .where(eq(correlationRules.id, id));
    }
    const now = new Date();
    // What the webhook path writes when rules match (test/ingest/rules-ingest.test.ts counts them).
    for (const [id, matchCount] of [
      [oldMatched, 6],
      [young, 1],
    ] as const) {
      await svc.database.db
        .update(correlationRules)
        .set({ matchCount, lastMatchedAt: now })
        .where(eq(correlationRules.id, id));
    }

    const stale = async (id: string) => (await svc.api('GET', `${base}/${id}`, { token: tenant.member })).body;
    expect(await stale(oldQuiet)).toMatchObject({ stale: true, matchCount: 0, lastMatchedAt: null });
    expect(await stale(oldDisabled)).toMatchObject({ stale: false });
    expect(await stale(young)).toMatchObject({ stale: false, matchCount: 1 });
    expect(await stale(oldMatched)).toMatchObject({
      stale: false,
      matchCount: 6,
      lastMatchedAt: now.toISOString(),
    });
    const staleOnly = await svc.api('GET', `${base}?stale=true`, { token: tenant.member });
    expect(staleOnly.body.items.map((r: { name: string }) => r.name)).toEqual(['old quiet']);
    expect((await svc.api('GET', `${base}?stale=false`, { token: tenant.member })).body.total).toBe(3);

    // A match long ago makes an old rule stale again.
    await svc.database.db
      .update(correlationRules)
      .set({ lastMatchedAt: new Date(now.getTime() - 7 * DAY - 60_000) })
      .where(eq(correlationRules.id, oldMatched));
    expect(await stale(oldMatched)).toMatchObject({ stale: true });
  });
});

describe('tenant setting correlationWindowMinutes', () => {
  it('reads 10 by default, takes 0 to 1440, and refuses anything else naming the setting', async () => {
    const tenant = await svc.newTenant();
    // As a tenant is created outside the tests: no setting stored (the test helper may store one).
    await svc.database.db.update(tenants).set({ settings: {} }).where(eq(tenants.id, tenant.tenantId));
    const path = `/v1/tenants/${tenant.tenantId}`;
    expect((await svc.api('GET', path, { token: tenant.member })).body.settings.correlationWindowMinutes).toBe(10);
    const set = (token: string, value: unknown) =>
      svc.api('PATCH', path, { token, body: { settings: { correlationWindowMinutes: value } } });
    for (const value of [30, 1, 1440, 0]) {
      const res = await set(tenant.admin, value);
      expect(res.status).toBe(200);
      expect(res.body.settings.correlationWindowMinutes).toBe(value);
      const [row] = await svc.database.db.select().from(tenants).where(eq(tenants.id, tenant.tenantId));
      expect(row!.settings.correlationWindowMinutes).toBe(value);
    }
    for (const value of [-1, 1441, 2.5, '10', null]) {
      const res = await set(tenant.admin, value);
      expect([res.status, res.body.error], String(value)).toEqual([400, 'validation_error']);
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain('settings.correlationWindowMinutes');
    }
    expect((await set(tenant.member, 5)).status).toBe(403);
    expect((await svc.api('GET', path, { token: tenant.member })).body.settings.correlationWindowMinutes).toBe(0);
  });
});
