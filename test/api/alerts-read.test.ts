import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alerts, type AlertState, type Correlation } from '../../src/db/schema/correlation.js';
import { incidents } from '../../src/db/schema/incidents.js';
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

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);

async function incident(tenantId: string, title = 'checkout 5xx'): Promise<string> {
  const id = newId('inc');
  await svc.database.db.insert(incidents).values({
    id,
    tenantId,
    title,
    description: 'Alerts grouped into one incident',
    severity: 'high',
    status: 'investigating',
    source: 'automated',
    service: 'checkout',
  });
  return id;
}

interface AlertSeed {
  tenantId: string;
  incidentId?: string | null;
  state?: AlertState;
  service?: string | null;
  name?: string;
  firstSeen: number;
  correlation?: Correlation | null;
  ruleId?: string | null;
  id?: string;
}

async function alert(seed: AlertSeed): Promise<string> {
  const id = seed.id ?? newId('alt');
  const name = seed.name ?? 'HighErrorRate';
  await svc.database.db.insert(alerts).values({
    id,
    tenantId: seed.tenantId,
    incidentId: seed.incidentId ?? null,
    state: seed.state ?? 'grouped',
    provider: 'alertmanager',
    fingerprint: `alertmanager:${id}`,
    name,
    service: seed.service === undefined ? 'checkout' : seed.service,
    severity: 'critical',
    status: 'firing',
    title: `[${name}] 5xx above 5%`,
    labels: { alertname: name, cluster: 'eu-1' },
    origins: [],
    correlation: seed.correlation ?? null,
    ruleId: seed.ruleId ?? null,
    firstSeenAt: at(seed.firstSeen),
    lastSeenAt: at(seed.firstSeen + 30),
    occurrenceCount: 2,
    flapping: false,
  });
  return id;
}

/** Every item of a list, page by page. */
async function allPages(token: string, path: string, limit: number) {
  const items: Array<Record<string, unknown>> = [];
  const totals: number[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res: { status: number; body: any } = await svc.api(
      'GET',
      `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
      { token },
    );
    expect(res.status).toBe(200);
    expect(res.body.items.length).toBeLessThanOrEqual(limit);
    items.push(...res.body.items);
    totals.push(res.body.total);
    cursor = res.body.nextCursor;
  } while (cursor);
  return { items, totals };
}

describe('GET /v1/incidents/{incidentId}/alerts', () => {
  it('lists the incident’s alerts oldest first, each with why it was grouped, in pages', async () => {
    const incidentId = await incident(t.tenantId);
    const first = await alert({
      tenantId: t.tenantId,
      incidentId,
      firstSeen: 0,
      correlation: { reason: 'fingerprint' },
    });
    const byTopology = await alert({
      tenantId: t.tenantId,
      incidentId,
      service: 'payments',
      firstSeen: 60,
      correlation: { reason: 'topology', relatedAlertId: first, hops: 2 },
    });
    // Two alerts first seen at the same instant: by id.
    const sameA = await alert({
      tenantId: t.tenantId,
      incidentId,
      firstSeen: 120,
      id: 'alt_0000000000000000000000000a',
      correlation: { reason: 'origin', relatedAlertId: first },
    });
    const sameB = await alert({
      tenantId: t.tenantId,
      incidentId,
      firstSeen: 120,
      id: 'alt_0000000000000000000000000b',
      correlation: { reason: 'rule', relatedAlertId: first, ruleId: 'crl_x' },
      ruleId: 'crl_x',
    });
    const earliest = await alert({ tenantId: t.tenantId, incidentId, firstSeen: -60, service: null });
    // Not of this incident: another incident's, one held, and another tenant's.
    await alert({ tenantId: t.tenantId, incidentId: await incident(t.tenantId), firstSeen: 30 });
    await alert({ tenantId: t.tenantId, state: 'pending', firstSeen: 30 });

    const res = await svc.api('GET', `/v1/incidents/${incidentId}/alerts`, { token: t.member });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(5);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.items.map((a: { alertId: string }) => a.alertId)).toEqual([
      earliest,
      first,
      byTopology,
      sameA,
      sameB,
    ]);
    expect(res.body.items[2]).toEqual({
      alertId: byTopology,
      incidentId,
      provider: 'alertmanager',
      service: 'payments',
      name: 'HighErrorRate',
      title: '[HighErrorRate] 5xx above 5%',
      status: 'firing',
      severity: 'critical',
      fingerprint: `alertmanager:${byTopology}`,
      labels: { alertname: 'HighErrorRate', cluster: 'eu-1' },
      firstSeenAt: at(60).toISOString(),
      lastSeenAt: at(90).toISOString(),
      occurrenceCount: 2,
      correlation: { reason: 'topology', relatedAlertId: first, hops: 2 },
      flapping: false,
      state: 'grouped',
      ruleId: null,
    });
    expect(res.body.items[0]).toMatchObject({ service: null, correlation: null });
    expect(res.body.items[4]).toMatchObject({ correlation: { reason: 'rule', ruleId: 'crl_x' }, ruleId: 'crl_x' });
    await expectConformsToDocument(svc, '/v1/incidents/{incidentId}/alerts', 'get', 200, res.body);

    const paged = await allPages(t.member, `/v1/incidents/${incidentId}/alerts`, 2);
    expect(paged.items.map((a) => a.alertId)).toEqual([earliest, first, byTopology, sameA, sameB]);
    expect(paged.totals).toEqual([5, 5, 5]);
  });

  it('answers an empty page for an incident without alerts (one opened through the api)', async () => {
    const created = await svc.api('POST', '/v1/incidents/chat', {
      token: t.member,
      body: { title: 'Manual incident', description: 'Opened by a person, no alert behind it' },
    });
    expect(created.status).toBe(201);
    const res = await svc.api('GET', `/v1/incidents/${created.body.incidentId}/alerts`, { token: t.admin });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], total: 0, nextCursor: null });
  });

  it("answers 404 for an unknown incident and for another tenant's, never showing its alerts", async () => {
    const theirs = await incident(other.tenantId);
    await alert({ tenantId: other.tenantId, incidentId: theirs, firstSeen: 0 });
    for (const id of [theirs, 'inc_000000000000000000000000']) {
      const res = await svc.api('GET', `/v1/incidents/${id}/alerts`, { token: t.admin });
      expect([res.status, res.body.error], id).toEqual([404, 'incident_not_found']);
    }
    expect((await svc.api('GET', `/v1/incidents/${theirs}/alerts`, { token: other.member })).body.total).toBe(1);
  });

  it('refuses bad paging with 400 and asks for a role', async () => {
    const incidentId = await incident(t.tenantId);
    const descCursor = Buffer.from(JSON.stringify([new Date().toISOString(), 'alt_x', 'desc'])).toString('base64url');
    for (const query of ['limit=0', 'limit=101', 'limit=ten', 'cursor=%%%', `cursor=${descCursor}`]) {
      const res = await svc.api('GET', `/v1/incidents/${incidentId}/alerts?${query}`, { token: t.member });
      expect([res.status, res.body.error], query).toEqual([400, 'validation_error']);
    }
    expect((await svc.api('GET', `/v1/incidents/${'i'.repeat(65)}/alerts`, { token: t.member })).status).toBe(400);
    expect((await svc.api('GET', `/v1/incidents/${incidentId}/alerts`)).status).toBe(401);
    const viewer = svc.token(t.tenantId, 'viewer' as never);
    expect((await svc.api('GET', `/v1/incidents/${incidentId}/alerts`, { token: viewer })).status).toBe(403);
  });
});

describe('GET /v1/alerts', () => {
  it('lists the tenant’s alerts newest first, filtered by state, incident and service, in pages', async () => {
    const tenant = await svc.newTenant();
    const inc = await incident(tenant.tenantId);
    const grouped = await alert({ tenantId: tenant.tenantId, incidentId: inc, firstSeen: 0 });
    const joined = await alert({ tenantId: tenant.tenantId, incidentId: inc, firstSeen: 10, service: 'payments' });
    const pending = await alert({
      tenantId: tenant.tenantId,
      state: 'pending',
      firstSeen: 20,
      ruleId: 'crl_hold',
      name: 'DiskFilling',
    });
    const suppressed = await alert({
      tenantId: tenant.tenantId,
      state: 'suppressed',
      firstSeen: 30,
      ruleId: 'crl_maint',
    });
    const test = await alert({ tenantId: tenant.tenantId, state: 'test', firstSeen: 40, name: 'Watchdog' });
    const dropped = await alert({ tenantId: tenant.tenantId, state: 'dropped', firstSeen: 50, ruleId: 'crl_hold' });
    await alert({ tenantId: other.tenantId, state: 'pending', firstSeen: 60 });

    const all = await svc.api('GET', '/v1/alerts', { token: tenant.member });
    expect(all.status).toBe(200);
    expect(all.body.items.map((a: { alertId: string }) => a.alertId)).toEqual([
      dropped,
      test,
      suppressed,
      pending,
      joined,
      grouped,
    ]);
    expect(all.body.total).toBe(6);
    expect(all.body.items[3]).toMatchObject({
      alertId: pending,
      incidentId: null,
      state: 'pending',
      ruleId: 'crl_hold',
      name: 'DiskFilling',
    });
    expect(all.body.items[5]).toMatchObject({ alertId: grouped, incidentId: inc, state: 'grouped', ruleId: null });
    await expectConformsToDocument(svc, '/v1/alerts', 'get', 200, all.body);

    const filtered = async (query: string) => {
      const res = await svc.api('GET', `/v1/alerts?${query}`, { token: tenant.member });
      expect(res.status, query).toBe(200);
      expect(res.body.total, query).toBe(res.body.items.length);
      return res.body.items.map((a: { alertId: string }) => a.alertId);
    };
    expect(await filtered('state=pending')).toEqual([pending]);
    expect(await filtered('state=suppressed')).toEqual([suppressed]);
    expect(await filtered('state=test')).toEqual([test]);
    expect(await filtered('state=dropped')).toEqual([dropped]);
    expect(await filtered('state=grouped')).toEqual([joined, grouped]);
    expect(await filtered(`incidentId=${inc}`)).toEqual([joined, grouped]);
    expect(await filtered('service=payments')).toEqual([joined]);
    expect(await filtered(`state=grouped&service=checkout&incidentId=${inc}`)).toEqual([grouped]);
    expect(await filtered('incidentId=inc_000000000000000000000000')).toEqual([]);

    const paged = await allPages(tenant.admin, '/v1/alerts', 4);
    expect(paged.items.map((a) => a.alertId)).toEqual([dropped, test, suppressed, pending, joined, grouped]);
    expect(paged.totals).toEqual([6, 6]);
    const pagedState = await allPages(tenant.admin, '/v1/alerts?state=grouped', 1);
    expect(pagedState.items.map((a) => a.alertId)).toEqual([joined, grouped]);
  });

  it('shows nothing of another tenant, and refuses bad filters with 400 naming them', async () => {
    const tenant = await svc.newTenant();
    const theirs = await incident(other.tenantId);
    await alert({ tenantId: other.tenantId, incidentId: theirs, firstSeen: 0 });
    const empty = await svc.api('GET', `/v1/alerts?incidentId=${theirs}`, { token: tenant.member });
    expect(empty.body).toEqual({ items: [], total: 0, nextCursor: null });
    expect((await svc.api('GET', '/v1/alerts', { token: tenant.member })).body.total).toBe(0);
    for (const [query, field] of [
      ['state=firing', 'state'],
      ['limit=101', 'limit'],
      [`incidentId=${'i'.repeat(65)}`, 'incidentId'],
      ['service=', 'service'],
    ] as const) {
      const res = await svc.api('GET', `/v1/alerts?${query}`, { token: tenant.member });
      expect([res.status, res.body.error], query).toEqual([400, 'validation_error']);
      expect(
        res.body.details.map((d: { path: string }) => d.path),
        query,
      ).toContain(field);
    }
    const ascCursor = Buffer.from(JSON.stringify([new Date().toISOString(), 'alt_x', 'asc'])).toString('base64url');
    expect((await svc.api('GET', `/v1/alerts?cursor=${ascCursor}`, { token: tenant.member })).status).toBe(400);
    expect((await svc.api('GET', '/v1/alerts')).status).toBe(401);
  });
});
