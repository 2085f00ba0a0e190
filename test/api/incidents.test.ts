import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents, incidentStatuses } from '../../src/db/schema/incidents.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { usagePeriod } from '../../src/domain/plans.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant({ plan: 'plan_pro' });
});
afterAll(() => svc?.stop());

const validIncident = { title: 'Checkout errors', description: 'HTTP 500 on /checkout since 03:12 UTC' };

async function createIncident(token = tenant.member, body: unknown = validIncident) {
  const res = await svc.api('POST', '/v1/incidents/chat', { token, body });
  expect(res.status).toBe(201);
  return res.body as { incidentId: string };
}

describe('POST /v1/incidents/chat', () => {
  it('opens a manual incident, stores it with its event and audit row, and starts its workflow', async () => {
    const res = await svc.api('POST', '/v1/incidents/chat', { token: tenant.member, body: validIncident });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      title: 'Checkout errors',
      severity: 'medium',
      status: 'open',
      source: 'manual',
      investigationsRemaining: 60,
      eventsRemaining: 2999,
    });
    expect(res.body.incidentId).toMatch(/^inc_[0-9a-z]{26}$/);
    const id = res.body.incidentId as string;

    const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, id));
    expect(row).toMatchObject({
      tenantId: tenant.tenantId,
      status: 'open',
      severity: 'medium',
      source: 'manual',
      version: 1,
    });
    expect(row!.workflowStartedAt).not.toBeNull();

    const created = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, id), eq(events.type, 'incident.created')))
      .orderBy(events.seq);
    expect(created).toHaveLength(1);
    expect(created[0]!.payload).toMatchObject({ incidentId: id, title: 'Checkout errors' });
    const audit = await svc.database.db.select().from(auditLog).where(eq(auditLog.targetId, id)).orderBy(auditLog.seq);
    expect(audit.map((a) => a.action)).toEqual(['incident.created']);
    expect(audit[0]).toMatchObject({
      actorType: 'user',
      actorId: 'user-member',
      requestId: res.headers.get('x-request-id'),
    });

    const description = await svc.client.workflow.getHandle(id).describe();
    expect(description.status.name).toBe('RUNNING');
    expect(description.taskQueue).toBe(svc.taskQueue);
    expect(await description.memo).toEqual({ title: 'Checkout errors' });
    const attributes = description.typedSearchAttributes;
    // Ours only: the server adds `BuildIds` once a worker has run the first workflow task.
    const ours = new Set(['IncidentStatus', 'Severity', 'Source', 'TenantId']);
    expect(
      attributes
        .getAll()
        .filter((p) => ours.has(p.key.name))
        .map((p) => [p.key.name, p.value])
        .sort(),
    ).toEqual([
      ['IncidentStatus', 'open'],
      ['Severity', 'medium'],
      ['Source', 'manual'],
      ['TenantId', tenant.tenantId],
    ]);
  });

  it.each([
    [{ description: 'long enough description' }, 'title'],
    [{ title: 'x' }, 'description'],
    [{ title: 'x', description: 'too short' }, 'description'],
    [{ title: 'x', description: 'y'.repeat(4001) }, 'description'],
    [{ title: '   ', description: 'long enough description' }, 'title'],
    // Only invisible format characters (zero-width space, word joiner, byte-order mark): blank.
    [{ title: '\u200b\u2060\ufeff', description: 'long enough description' }, 'title'],
    [{ title: 'x', description: '\u200b'.repeat(12) }, 'description'],
    [{ title: 42, description: 'long enough description' }, 'title'],
    [{ title: 'db down\nINFO all clear', description: 'long enough description' }, 'title'],
    [{ title: '\u001b[31mred\u001b[0m', description: 'long enough description' }, 'title'],
    [{ title: 'tab\there', description: 'long enough description' }, 'title'],
    [{ title: 'x', description: 'long enough description', service: 'checkout\r\napi' }, 'service'],
  ])('rejects %j with 400 validation_error naming %s', async (body, field) => {
    const res = await svc.api('POST', '/v1/incidents/chat', { token: tenant.member, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(res.body.message).toContain(field);
    expect(res.body.details.some((d: { path: string }) => d.path === field)).toBe(true);
  });

  it('accepts a 4000-character description and rejects malformed JSON', async () => {
    const ok = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'Long', description: 'd'.repeat(4000) },
    });
    expect(ok.status).toBe(201);
    const bad = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      rawBody: '{"title": "x",',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'validation_error', message: expect.stringMatching(/JSON/i) });
  });

  it('answers 400, never 500, for a body that is not JSON, for NUL or a lone surrogate in any text, and for %00 in the URL', async () => {
    const before = await svc.database.db
      .select({ id: incidents.id })
      .from(incidents)
      .where(eq(incidents.tenantId, tenant.tenantId));
    const body = JSON.stringify({ title: 'Checkout 500s', description: 'HTTP 500 on /checkout since 03:12 UTC' });
    for (const type of [undefined, 'text/plain', 'application/x-www-form-urlencoded']) {
      const res = await svc.api('POST', '/v1/incidents/chat', {
        token: tenant.member,
        rawBody: body,
        headers: type ? { 'content-type': type } : {},
      });
      expect(res.status, String(type)).toBe(400);
      expect(res.body).toEqual({
        error: 'validation_error',
        message: 'The request body must be JSON, sent with Content-Type: application/json',
      });
    }
    const nul = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'nul\u0000byte', description: 'HTTP 500 on /checkout' },
    });
    expect(nul.status).toBe(400);
    expect(nul.body).toEqual({
      error: 'validation_error',
      message: 'title: must not contain a NUL (\\u0000) character',
      details: [{ path: 'title', message: 'must not contain a NUL (\\u0000) character' }],
    });
    const surrogate = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      rawBody: '{"title":"ok","description":"a\\udc00b","tags":["x"]}',
      headers: { 'content-type': 'application/json' },
    });
    expect(surrogate.status).toBe(400);
    expect(surrogate.body.details).toEqual([
      { path: 'description', message: 'must not contain an unpaired UTF-16 surrogate' },
    ]);
    const deep = await svc.api('PATCH', '/v1/tenants/' + tenant.tenantId, {
      token: tenant.admin,
      body: { settings: { escalation: ['a', 'b\u0000'] } },
    });
    expect(deep.status).toBe(400);
    expect(deep.body.details).toEqual([{ path: 'settings.escalation.1', message: expect.stringMatching(/NUL/) }]);
    for (const path of ['/v1/incidents/%00', '/v1/runbooks?q=%00', '/v1/incidents?status=open%00']) {
      const res = await svc.api('GET', path, { token: tenant.member });
      expect(res.status, path).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    // A surrogate pair (an emoji) is fine.
    const emoji = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'Checkout 💥', description: 'HTTP 500 on /checkout' },
    });
    expect(emoji.status).toBe(201);
    const after = await svc.database.db
      .select({ id: incidents.id })
      .from(incidents)
      .where(eq(incidents.tenantId, tenant.tenantId));
    expect(after.length).toBe(before.length + 1);
  });

  it('keeps a validation answer short whatever the body: 20 problems listed at most, each clipped', async () => {
    const extra = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`unknown_field_${i}`, i]));
    // Runbooks refuse unknown fields: one problem naming every key.
    const res = await svc.api('POST', '/v1/runbooks', { token: tenant.admin, body: { title: 'x', ...extra } });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(JSON.stringify(res.body).length).toBeLessThan(8_000);
    expect(res.body.details.length).toBeLessThanOrEqual(20);
    expect(
      res.body.details.every((d: { message: string; path: string }) => d.message.length <= 300 && d.path.length <= 300),
    ).toBe(true);
    expect(
      res.body.details.some((d: { message: string }) => /unknown_field_0/.test(d.message) && d.message.endsWith('…')),
      JSON.stringify(res.body).slice(0, 1500),
    ).toBe(true);
  });

  /** The payloads of the tenant's `system.quota_warning` events. */
  const quotaWarnings = async (tenantId: string) =>
    (
      await svc.database.db
        .select()
        .from(events)
        .where(and(eq(events.tenantId, tenantId), eq(events.type, 'system.quota_warning')))
    ).map((w) => w.payload);

  it('counts the monthly event quota and answers 429 event_quota_exceeded when it is reached', async () => {
    const starter = await svc.newTenant({ plan: 'plan_starter' });
    const period = usagePeriod(new Date());
    await svc.database.db
      .insert(usageCounters)
      .values({ tenantId: starter.tenantId, period, metric: 'events', count: 498 });
    const first = await svc.api('POST', '/v1/incidents/chat', { token: starter.admin, body: validIncident });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ eventsRemaining: 1, investigationsRemaining: 15 });
    const last = await svc.api('POST', '/v1/incidents/chat', { token: starter.admin, body: validIncident });
    expect(last.body.eventsRemaining).toBe(0);
    const refused = await svc.api('POST', '/v1/incidents/chat', { token: starter.admin, body: validIncident });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('event_quota_exceeded');
    const stored = await svc.database.db.select().from(incidents).where(eq(incidents.tenantId, starter.tenantId));
    expect(stored).toHaveLength(2); // the refused one left nothing behind
    const [usage] = await svc.database.db
      .select()
      .from(usageCounters)
      .where(eq(usageCounters.tenantId, starter.tenantId));
    expect(usage!.count).toBe(500);
    // Reaching 100 % by a manual incident warns once, as ingestion does.
    expect(await quotaWarnings(starter.tenantId)).toEqual([
      { metric: 'events', period, used: 500, limit: 500, percent: 100 },
    ]);
  });

  it('warns at 80 % of the event quota when a manual incident crosses it, once a month across paths', async () => {
    const starter = await svc.newTenant({ plan: 'plan_starter' });
    const period = usagePeriod(new Date());
    await svc.database.db
      .insert(usageCounters)
      .values({ tenantId: starter.tenantId, period, metric: 'events', count: 398 });
    for (let i = 0; i < 3; i++)
      expect((await svc.api('POST', '/v1/incidents/chat', { token: starter.admin, body: validIncident })).status).toBe(
        201,
      );
    // The same mark reached again (the count set back by hand) is not warned twice this month.
    await svc.database.db.update(usageCounters).set({ count: 398 }).where(eq(usageCounters.tenantId, starter.tenantId));
    expect((await svc.api('POST', '/v1/incidents/chat', { token: starter.admin, body: validIncident })).status).toBe(
      201,
    );
    expect((await svc.api('POST', '/v1/incidents/chat', { token: starter.admin, body: validIncident })).status).toBe(
      201,
    );
    expect(await quotaWarnings(starter.tenantId)).toEqual([
      { metric: 'events', period, used: 400, limit: 500, percent: 80 },
    ]);
  });

  it('uses custom enterprise quotas, and the documented defaults where none is set (decision 251)', async () => {
    const custom = await svc.newTenant({ plan: 'plan_enterprise', settings: { quotas: { eventsPerMonth: 1 } } });
    expect(
      (await svc.api('POST', '/v1/incidents/chat', { token: custom.admin, body: validIncident })).body,
    ).toMatchObject({ eventsRemaining: 0, investigationsRemaining: 2000 });
    expect((await svc.api('POST', '/v1/incidents/chat', { token: custom.admin, body: validIncident })).status).toBe(
      429,
    );
    const byDefault = await svc.newTenant({ plan: 'plan_enterprise' });
    const res = await svc.api('POST', '/v1/incidents/chat', { token: byDefault.admin, body: validIncident });
    expect(res.body).toMatchObject({ eventsRemaining: 999_999, investigationsRemaining: 2000 });
  });
});

describe('GET /v1/incidents', () => {
  let listTenant: { tenantId: string; admin: string; member: string };
  let createdIds: string[];

  beforeAll(async () => {
    listTenant = await svc.newTenant();
    createdIds = [];
    for (let i = 0; i < 25; i++)
      createdIds.push(
        (await createIncident(listTenant.member, { ...validIncident, title: `Incident ${i}` })).incidentId,
      );
    // Severity only changes through triage (a later capability); set a few directly to test the filter.
    for (const id of createdIds.slice(0, 3)) {
      await svc.database.db.update(incidents).set({ severity: 'critical' }).where(eq(incidents.id, id));
    }
  });

  it('pages newest first across pages with a cursor and a total count', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `/v1/incidents?limit=10${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await svc.api('GET', query, { token: listTenant.member });
      expect(res.status).toBe(200);
      expect(res.body.count).toBe(25);
      expect(res.body.incidents.length).toBeLessThanOrEqual(10);
      for (const incident of res.body.incidents) {
        expect(Object.keys(incident).sort()).toEqual([
          'createdAt',
          'incidentId',
          'mergedInto',
          'severity',
          'source',
          'status',
          'title',
        ]);
      }
      seen.push(...res.body.incidents.map((i: { incidentId: string }) => i.incidentId));
      cursor = res.body.cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...createdIds].reverse());
  });

  it('orders ascending on request and defaults the limit to 20', async () => {
    const res = await svc.api('GET', '/v1/incidents?order=asc&sort=createdAt', { token: listTenant.member });
    expect(res.body.incidents).toHaveLength(20);
    expect(res.body.incidents.map((i: { incidentId: string }) => i.incidentId)).toEqual(createdIds.slice(0, 20));
    const next = await svc.api('GET', `/v1/incidents?order=asc&cursor=${res.body.cursor}`, {
      token: listTenant.member,
    });
    expect(next.body.incidents.map((i: { incidentId: string }) => i.incidentId)).toEqual(createdIds.slice(20));
    expect(next.body.cursor).toBeNull();
  });

  it('filters by severity and status, with count across pages', async () => {
    const critical = await svc.api('GET', '/v1/incidents?severity=critical&limit=2', { token: listTenant.member });
    expect(critical.body.count).toBe(3);
    expect(critical.body.incidents).toHaveLength(2);
    expect(critical.body.incidents.every((i: { severity: string }) => i.severity === 'critical')).toBe(true);
    const patched = await svc.api('PATCH', `/v1/incidents/${createdIds[5]}`, {
      token: listTenant.member,
      body: { status: 'investigating' },
    });
    expect(patched.status).toBe(200);
    const investigating = await svc.api('GET', '/v1/incidents?status=investigating', { token: listTenant.member });
    expect(investigating.body).toMatchObject({ count: 1, cursor: null });
    expect(investigating.body.incidents[0].incidentId).toBe(createdIds[5]);
    const none = await svc.api('GET', '/v1/incidents?status=closed&severity=low', { token: listTenant.member });
    expect(none.body).toEqual({ incidents: [], count: 0, cursor: null });
  });

  it.each([
    'limit=0',
    'limit=101',
    'limit=abc',
    'limit=0x10',
    'limit=1e1',
    'limit=%205',
    'limit=5.0',
    'limit=',
    'severity=urgent',
    'status=done',
    'sort=title',
    'order=up',
    'cursor=not-a-cursor',
  ])('rejects %s with 400 validation_error', async (query) => {
    const res = await svc.api('GET', `/v1/incidents?${query}`, { token: listTenant.member });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
  });

  it('rejects a forged cursor whose time PostgreSQL cannot store with 400, not 500', async () => {
    const forged: unknown[][] = [
      ['+010000-01-01T00:00:00.000Z', 'inc_x', 'desc'],
      ['1969-12-31T23:59:59.000Z', 'inc_x', 'desc'],
      [12345, 'inc_x', 'desc'],
      ['2026-01-01T00:00:00.000Z', 'inc\u0000x', 'desc'],
      ['2026-01-01T00:00:00.000Z', 'i'.repeat(129), 'desc'],
      ['2024-02-30T00:00:00.000Z', 'inc_x', 'desc'], // no such day: not rolled over to 1 March
      ['2026-01-01', 'inc_x', 'desc'], // not the time as issued
    ];
    for (const parts of forged) {
      const cursor = Buffer.from(JSON.stringify(parts)).toString('base64url');
      const res = await svc.api('GET', `/v1/incidents?cursor=${cursor}`, { token: listTenant.member });
      expect([res.status, res.body.error], JSON.stringify(parts)).toEqual([400, 'validation_error']);
    }
    // A cursor as issued works; the same bytes in standard base64 (with + / =) are not one of ours.
    const issued = Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', 'inc_x', 'desc'])).toString('base64url');
    expect((await svc.api('GET', `/v1/incidents?cursor=${issued}`, { token: listTenant.member })).status).toBe(200);
    const standard = encodeURIComponent(
      `${Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', 'inc_x', 'desc'])).toString('base64')}=`,
    );
    expect((await svc.api('GET', `/v1/incidents?cursor=${standard}`, { token: listTenant.member })).status).toBe(400);
  });

  it('rejects a cursor issued for the other sort order', async () => {
    const first = await svc.api('GET', '/v1/incidents?limit=5', { token: listTenant.member });
    const res = await svc.api('GET', `/v1/incidents?order=asc&cursor=${first.body.cursor}`, {
      token: listTenant.member,
    });
    expect(res.status).toBe(400);
  });
});

describe('GET and PATCH /v1/incidents/{id}', () => {
  it('returns the full incident, and 404 incident_not_found for an unknown id', async () => {
    const { incidentId } = await createIncident();
    const res = await svc.api('GET', `/v1/incidents/${incidentId}`, { token: tenant.member });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      incidentId,
      title: validIncident.title,
      description: validIncident.description,
      assignedAgents: [],
      rootCause: null,
      recommendedActions: [],
    });
    const missing = await svc.api('GET', '/v1/incidents/inc_doesnotexist', { token: tenant.member });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('incident_not_found');
    const patchMissing = await svc.api('PATCH', '/v1/incidents/inc_doesnotexist', {
      token: tenant.member,
      body: { status: 'closed' },
    });
    expect(patchMissing.status).toBe(404);
  });

  it('moves to every status; response, stored row and workflow state agree; events and audit follow', async () => {
    const { incidentId } = await createIncident();
    const order = [...incidentStatuses.filter((s) => s !== 'open' && s !== 'closed'), 'open'] as const;
    let version = 1;
    for (const status of order) {
      const res = await svc.api('PATCH', `/v1/incidents/${incidentId}`, { token: tenant.member, body: { status } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ incidentId, status, source: 'manual', severity: 'medium' });
      version++;
      const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, incidentId));
      expect(row).toMatchObject({ status, version });
      const state = await svc.client.workflow.getHandle(incidentId).query(getStateQuery);
      expect(state).toMatchObject({ status, version });
      const description = await svc.client.workflow.getHandle(incidentId).describe();
      expect(description.typedSearchAttributes.getAll().find((p) => p.key.name === 'IncidentStatus')?.value).toBe(
        status,
      );
    }
    const changes = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, incidentId), eq(events.type, 'incident.status_changed')))
      .orderBy(events.seq);
    expect(changes.map((e) => e.payload.to)).toEqual([...order]);
    expect(changes[0]!.payload).toMatchObject({
      from: 'open',
      to: 'triaging',
      actorType: 'user',
      actorId: 'user-member',
    });
    const resolved = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, incidentId), eq(events.type, 'incident.resolved')))
      .orderBy(events.seq);
    expect(resolved).toHaveLength(1);
    const audits = await svc.database.db
      .select()
      .from(auditLog)
      .where(eq(auditLog.incidentId, incidentId))
      .orderBy(auditLog.seq);
    expect(audits.filter((a) => a.action === 'incident.status_changed')).toHaveLength(order.length);
    expect(audits.find((a) => a.action === 'incident.status_changed')?.workflowId).toBe(incidentId);
  });

  it('treats a PATCH to the current status as a no-op', async () => {
    const { incidentId } = await createIncident();
    const res = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
      token: tenant.member,
      body: { status: 'open' },
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('open');
    const changes = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, incidentId), eq(events.type, 'incident.status_changed')))
      .orderBy(events.seq);
    expect(changes).toHaveLength(0);
  });

  it('closes the workflow on closed, and reopens a closed incident as a new run of the same workflow id', async () => {
    const { incidentId } = await createIncident();
    const closed = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
      token: tenant.admin,
      body: { status: 'closed' },
    });
    expect(closed.body.status).toBe('closed');
    const handle = svc.client.workflow.getHandle(incidentId);
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'closed', version: 2 });
    const firstRun = (await handle.describe()).runId;

    const reopened = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
      token: tenant.admin,
      body: { status: 'investigating' },
    });
    expect(reopened.status).toBe(200);
    expect(reopened.body.status).toBe('investigating');
    const current = await svc.client.workflow.getHandle(incidentId).describe();
    expect(current.runId).not.toBe(firstRun);
    expect(current.status.name).toBe('RUNNING');
    expect(await svc.client.workflow.getHandle(incidentId).query(getStateQuery)).toMatchObject({
      status: 'investigating',
      version: 3,
    });
  });

  it('answers a move to investigating with the incident as the investigation it starts left it', async () => {
    const { incidentId } = await createIncident();
    // An earlier conclusion, which starting a new investigation clears.
    await svc.database.db
      .update(incidents)
      .set({ rootCause: 'an earlier conclusion' })
      .where(eq(incidents.id, incidentId));
    const moved = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
      token: tenant.member,
      body: { status: 'investigating' },
    });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ status: 'investigating', rootCause: null });
    const read = await svc.api('GET', `/v1/incidents/${incidentId}`, { token: tenant.member });
    expect(read.body.rootCause).toBeNull();
    expect(await svc.client.workflow.getHandle(incidentId).query(getStateQuery)).toMatchObject({ investigationRun: 1 });
  });

  it('serialises concurrent PATCHes: every one lands once and the projection matches the workflow', async () => {
    const { incidentId } = await createIncident();
    const targets = ['triaging', 'investigating', 'awaiting_approval', 'remediating'] as const;
    const results = await Promise.all(
      targets.map((status) =>
        svc.api('PATCH', `/v1/incidents/${incidentId}`, { token: tenant.member, body: { status } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    // The workflow takes them one at a time: each answers the status it set.
    expect(results.map((r) => r.body.status)).toEqual([...targets]);
    // Each PATCH's move is recorded. The investigation a PATCH started moves the incident back to
    // `investigating` on that person's behalf when a later PATCH moved it to `triaging`, so a
    // status may be recorded twice; the projection is compared with the workflow once both settle.
    const statusEvents = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, incidentId), eq(events.type, 'incident.status_changed')));
    const byPerson = statusEvents.map((e) => e.payload as { to?: string; actorType?: string });
    for (const status of targets)
      expect(byPerson.filter((p) => p.to === status && p.actorType !== 'system').length).toBeGreaterThanOrEqual(1);
    const settled = await eventually(async () => {
      const state = await svc.client.workflow.getHandle(incidentId).query(getStateQuery);
      const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, incidentId));
      return row && row.status === state.status && row.version === state.version ? { state, row } : undefined;
    }, 20_000);
    expect(settled.state.version).toBeGreaterThanOrEqual(5);
  });

  it.each([{ status: 'done' }, {}, { status: null }])('rejects PATCH body %j with 400', async (body) => {
    const { incidentId } = await createIncident();
    const res = await svc.api('PATCH', `/v1/incidents/${incidentId}`, { token: tenant.member, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
  });
});

describe('tenant isolation', () => {
  it("never shows, lists or changes another tenant's incident", async () => {
    const { incidentId } = await createIncident();
    const other = await svc.newTenant();
    expect((await svc.api('GET', `/v1/incidents/${incidentId}`, { token: other.admin })).status).toBe(404);
    const patch = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
      token: other.admin,
      body: { status: 'closed' },
    });
    expect(patch.status).toBe(404);
    expect(patch.body.error).toBe('incident_not_found');
    const list = await svc.api('GET', '/v1/incidents', { token: other.admin });
    expect(list.body).toEqual({ incidents: [], count: 0, cursor: null });
    const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, incidentId));
    expect(row!.status).toBe('open');
  });
});
