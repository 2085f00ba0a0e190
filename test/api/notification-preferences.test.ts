/** `GET`/`PUT /v1/notifications/preferences`: a person's own preferences, over real HTTP. */
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { notificationPreferences } from '../../src/db/schema/correlation.js';
import { EVENT_TYPES } from '../../src/outbox/events.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
type Tenant = Awaited<ReturnType<TestService['newTenant']>>;
let tenant: Tenant;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
  tenant = await svc.newTenant();
});
afterAll(() => svc?.stop());

const PATH = '/v1/notifications/preferences';
const get = (token: string) => svc.api('GET', PATH, { token });
const put = (token: string, body: unknown) => svc.api('PUT', PATH, { token, body });

describe('GET /v1/notifications/preferences', () => {
  it('answers the defaults while none are saved: nothing switched off, every severity', async () => {
    const res = await get(svc.token(tenant.tenantId, 'member', { sub: 'fresh-member' }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ disabledTypes: [], minSeverity: 'low', updatedAt: null });
  });

  it('is 401 without a token', async () => {
    expect((await svc.api('GET', PATH)).status).toBe(401);
    expect((await svc.api('PUT', PATH, { body: { disabledTypes: [], minSeverity: 'low' } })).status).toBe(401);
  });
});

describe('PUT /v1/notifications/preferences', () => {
  it('saves the caller’s own preferences (member or admin), answers and reads them back, and audits the change', async () => {
    const member = svc.token(tenant.tenantId, 'member', { sub: 'pat-member' });
    const admin = svc.token(tenant.tenantId, 'admin', { sub: 'pat-admin' });
    const saved = await put(member, {
      disabledTypes: ['incident.status_changed', 'investigation.completed', 'incident.status_changed'],
      minSeverity: 'high',
    });
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({
      disabledTypes: ['incident.status_changed', 'investigation.completed'],
      minSeverity: 'high',
      updatedAt: expect.any(String),
    });
    expect((await get(member)).body).toEqual(saved.body);
    // The admin's are their own, untouched by the member's.
    expect((await get(admin)).body).toEqual({ disabledTypes: [], minSeverity: 'low', updatedAt: null });
    const adminSaved = await put(admin, { disabledTypes: ['approval.requested'], minSeverity: 'critical' });
    expect(adminSaved.status).toBe(200);
    expect((await get(member)).body).toEqual(saved.body);

    // A PUT replaces: an empty list switches everything back on.
    const cleared = await put(member, { disabledTypes: [], minSeverity: 'medium' });
    expect(cleared.body).toMatchObject({ disabledTypes: [], minSeverity: 'medium' });
    expect(Date.parse(cleared.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(saved.body.updatedAt));

    const rows = await svc.database.db
      .select()
      .from(notificationPreferences)
      .where(eq(notificationPreferences.tenantId, tenant.tenantId));
    expect(
      rows
        .map((r) => [r.userId, r.disabledTypes, r.minSeverity])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    ).toEqual([
      ['pat-admin', ['approval.requested'], 'critical'],
      ['pat-member', [], 'medium'],
    ]);
    const audit = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenant.tenantId), eq(auditLog.action, 'notification_preferences.updated')))
      .orderBy(auditLog.seq);
    expect(audit.map((a) => [a.actorId, a.targetId, a.details])).toEqual([
      [
        'pat-member',
        'pat-member',
        { disabledTypes: ['incident.status_changed', 'investigation.completed'], minSeverity: 'high' },
      ],
      ['pat-admin', 'pat-admin', { disabledTypes: ['approval.requested'], minSeverity: 'critical' }],
      ['pat-member', 'pat-member', { disabledTypes: [], minSeverity: 'medium' }],
    ]);
  });

  it('accepts every type of the event catalogue', async () => {
    const token = svc.token(tenant.tenantId, 'member', { sub: 'all-off' });
    const res = await put(token, { disabledTypes: [...EVENT_TYPES], minSeverity: 'critical' });
    expect(res.status).toBe(200);
    expect(res.body.disabledTypes).toEqual([...EVENT_TYPES].sort());
  });

  it('is per tenant: the same person in another tenant has preferences of their own', async () => {
    const other = await svc.newTenant();
    const here = svc.token(tenant.tenantId, 'member', { sub: 'twin' });
    const there = svc.token(other.tenantId, 'member', { sub: 'twin' });
    expect((await put(here, { disabledTypes: ['incident.created'], minSeverity: 'high' })).status).toBe(200);
    expect((await get(there)).body).toEqual({ disabledTypes: [], minSeverity: 'low', updatedAt: null });
    expect((await get(here)).body).toMatchObject({ disabledTypes: ['incident.created'], minSeverity: 'high' });
  });

  it('refuses an unknown event type with 400 validation_error naming it, and any other bad body naming the field', async () => {
    const token = svc.token(tenant.tenantId, 'member', { sub: 'bad-input' });
    const unknown = await put(token, { disabledTypes: ['incident.created', 'incident.exploded'], minSeverity: 'low' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({
      error: 'validation_error',
      message: "disabledTypes.1: unknown event type 'incident.exploded'",
      details: [{ path: 'disabledTypes.1', message: "unknown event type 'incident.exploded'" }],
    });
    const cases: Array<[unknown, string]> = [
      [{ disabledTypes: [], minSeverity: 'urgent' }, 'minSeverity'],
      [{ disabledTypes: [] }, 'minSeverity'],
      [{ minSeverity: 'low' }, 'disabledTypes'],
      [{ disabledTypes: 'incident.created', minSeverity: 'low' }, 'disabledTypes'],
      [{ disabledTypes: [7], minSeverity: 'low' }, 'disabledTypes.0'],
      [{ disabledTypes: [], minSeverity: 'low', muted: true }, ''],
      [{ disabledTypes: Array.from({ length: 43 }, () => 'incident.created'), minSeverity: 'low' }, 'disabledTypes'],
    ];
    for (const [body, path] of cases) {
      const res = await put(token, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('validation_error');
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const notJson = await svc.api('PUT', PATH, {
      token,
      rawBody: 'not json',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
    // Nothing was saved by any of them.
    expect((await get(token)).body).toEqual({ disabledTypes: [], minSeverity: 'low', updatedAt: null });
  });

  it('is in the OpenAPI document, for members and admins', async () => {
    const doc = (await svc.api('GET', '/openapi.json')).body;
    const path = doc.paths['/v1/notifications/preferences'];
    expect(Object.keys(path).sort()).toEqual(['get', 'put']);
    expect(path.get.security).toEqual([{ bearerAuth: ['member'] }]);
    expect(path.put.security).toEqual([{ bearerAuth: ['member'] }]);
    expect(Object.keys(path.put.responses).sort()).toEqual(expect.arrayContaining(['200', '400', '401', '403']));
    expect(doc.components.schemas.NotificationPreferencesUpdate).toMatchObject({
      required: ['disabledTypes', 'minSeverity'],
      additionalProperties: false,
    });
    expect(doc.components.schemas.NotificationPreferencesUpdate.properties.disabledTypes.items.enum).toEqual([
      ...EVENT_TYPES,
    ]);
    expect(doc.components.schemas.NotificationPreferences.properties.minSeverity.enum).toEqual([
      'critical',
      'high',
      'medium',
      'low',
    ]);
  });
});
