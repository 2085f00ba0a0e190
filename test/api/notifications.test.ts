import { eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTIFICATION_RETENTION_MS, purgeNotifications } from '../../src/db/repositories/notifications.js';
import { notifications } from '../../src/db/schema/remediation.js';
import { newId } from '../../src/ids.js';
import { housekeepUntil, startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let tenantId: string;
let other: { tenantId: string; admin: string };
let bob: string;
let alice: string;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
  ({ tenantId } = await svc.newTenant());
  const o = await svc.newTenant();
  other = { tenantId: o.tenantId, admin: o.admin };
  bob = svc.token(tenantId, 'member', { sub: 'bob' });
  alice = svc.token(tenantId, 'admin', { sub: 'alice' });
});
afterAll(() => svc?.stop());

/** n notifications for a user, one second apart, oldest first; returns their ids oldest first. */
async function seed(
  tenant: string,
  userId: string,
  n: number,
  type = 'incident.created',
  start = Date.UTC(2025, 0, 1),
) {
  const rows = Array.from({ length: n }, (_, i) => ({
    id: newId('ntf'),
    tenantId: tenant,
    userId,
    type,
    incidentId: `inc_${i}`,
    payload: { title: `${type} ${i}`, body: `body ${i}`, incidentId: `inc_${i}`, remediationId: `rem_${i}` },
    idempotencyKey: newId('ntf'),
    createdAt: new Date(start + i * 1000),
  }));
  await svc.database.db.insert(notifications).values(rows);
  return rows.map((r) => r.id);
}

const list = (token: string, query = '') => svc.api('GET', `/v1/notifications${query}`, { token });

describe('GET /v1/notifications', () => {
  it('lists only the caller’s notifications, most recent first, with the interface fields', async () => {
    const mine = await seed(tenantId, 'bob', 3);
    await seed(tenantId, 'alice', 2);
    await seed(other.tenantId, 'bob', 2); // same subject in another tenant
    const res = await list(bob);
    expect(res.status).toBe(200);
    expect(res.body.items.map((i: { notificationId: string }) => i.notificationId)).toEqual([...mine].reverse());
    expect(res.body.items[0]).toEqual({
      notificationId: mine[2],
      type: 'incident.created',
      title: 'incident.created 2',
      body: 'body 2',
      read: false,
      incidentId: 'inc_2',
      remediationId: 'rem_2',
      approvalId: null,
      createdAt: '2025-01-01T00:00:02.000Z',
    });
    expect(res.body.unreadCount).toBe(3);
    expect(res.body.nextCursor).toBeNull();
  });

  it('pages with limit and cursor, and filters by read and type', async () => {
    const ids = await seed(tenantId, 'pager', 5, 'triage.completed', Date.UTC(2025, 1, 1));
    await seed(tenantId, 'pager', 2, 'incident.resolved', Date.UTC(2024, 1, 1));
    const token = svc.token(tenantId, 'member', { sub: 'pager' });
    const first = await list(token, '?type=triage.completed&limit=2');
    expect(first.body.items.map((i: { notificationId: string }) => i.notificationId)).toEqual([ids[4], ids[3]]);
    const second = await list(token, `?type=triage.completed&limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.items.map((i: { notificationId: string }) => i.notificationId)).toEqual([ids[2], ids[1]]);
    const third = await list(token, `?type=triage.completed&limit=2&cursor=${second.body.nextCursor}`);
    expect(third.body.items.map((i: { notificationId: string }) => i.notificationId)).toEqual([ids[0]]);
    expect(third.body.nextCursor).toBeNull();
    expect(first.body.unreadCount).toBe(7);

    expect(
      (await svc.api('POST', '/v1/notifications/read', { token, body: { notificationIds: [ids[0], ids[1]] } })).status,
    ).toBe(204);
    const read = await list(token, '?read=true');
    expect(read.body.items.map((i: { notificationId: string; read: boolean }) => [i.notificationId, i.read])).toEqual([
      [ids[1], true],
      [ids[0], true],
    ]);
    const unread = await list(token, '?read=false&type=triage.completed');
    expect(unread.body.items.map((i: { notificationId: string }) => i.notificationId)).toEqual([
      ids[4],
      ids[3],
      ids[2],
    ]);
    expect(unread.body.unreadCount).toBe(5);
  });

  it('rejects bad parameters and missing tokens', async () => {
    for (const q of ['?limit=0', '?limit=201', '?read=yes', '?cursor=nonsense']) {
      const res = await list(bob, q);
      expect(res.status, q).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    expect((await svc.api('GET', '/v1/notifications')).status).toBe(401);
    expect((await svc.api('GET', '/v1/notifications', { token: svc.token(tenantId, 'viewer' as never) })).status).toBe(
      403,
    );
  });

  it('gives approval requests written without a title one from their type', async () => {
    await svc.database.db.insert(notifications).values({
      id: newId('ntf'),
      tenantId,
      userId: 'approver',
      type: 'approval.requested',
      incidentId: 'inc_a',
      payload: {
        incidentId: 'inc_a',
        remediationId: 'rem_a',
        approvalId: 'apr_a',
        deadline: '2025-01-01T00:30:00.000Z',
      },
      idempotencyKey: newId('ntf'),
    });
    const res = await list(svc.token(tenantId, 'admin', { sub: 'approver' }));
    expect(res.body.items[0]).toMatchObject({
      type: 'approval.requested',
      title: 'Approval requested',
      approvalId: 'apr_a',
      remediationId: 'rem_a',
      incidentId: 'inc_a',
    });
    expect(res.body.items[0].body).toContain('awaits approval');
  });
});

describe('POST /v1/notifications/read', () => {
  it('marks all of the caller’s own notifications read and touches nobody else’s', async () => {
    const carolIds = await seed(tenantId, 'carol', 3);
    const daveIds = await seed(tenantId, 'dave', 2);
    const otherIds = await seed(other.tenantId, 'carol', 1);
    const carol = svc.token(tenantId, 'member', { sub: 'carol' });
    // Someone else's ids are silently ignored.
    expect(
      (
        await svc.api('POST', '/v1/notifications/read', {
          token: carol,
          body: { notificationIds: [...daveIds, ...otherIds] },
        })
      ).status,
    ).toBe(204);
    expect((await list(svc.token(tenantId, 'member', { sub: 'dave' }))).body.unreadCount).toBe(2);
    expect((await list(carol)).body.unreadCount).toBe(3);
    expect((await svc.api('POST', '/v1/notifications/read', { token: carol, body: { all: true } })).status).toBe(204);
    const after = await list(carol);
    expect(after.body.unreadCount).toBe(0);
    expect(after.body.items).toHaveLength(3);
    expect(after.body.items.every((i: { read: boolean }) => i.read)).toBe(true);
    const carolRows = await svc.database.db.select().from(notifications).where(inArray(notifications.id, carolIds));
    expect(carolRows).toHaveLength(3);
    expect(carolRows.every((r) => r.readAt !== null)).toBe(true);
    expect((await list(svc.token(tenantId, 'member', { sub: 'dave' }))).body.unreadCount).toBe(2);
    const [otherRow] = await svc.database.db.select().from(notifications).where(eq(notifications.id, otherIds[0]!));
    expect(otherRow!.readAt).toBeNull();
    const daveRows = await svc.database.db.select().from(notifications).where(inArray(notifications.id, daveIds));
    expect(daveRows.map((r) => r.readAt)).toEqual([null, null]);
  });

  it('needs exactly one of notificationIds (1 to 200) and all: true', async () => {
    const bodies = [
      {},
      { all: false },
      { notificationIds: [] },
      { notificationIds: Array.from({ length: 201 }, (_, i) => `ntf_${i}`) },
      { notificationIds: ['ntf_1'], all: true },
      { all: true, extra: 1 },
    ];
    for (const body of bodies) {
      const res = await svc.api('POST', '/v1/notifications/read', { token: alice, body });
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    expect((await svc.api('POST', '/v1/notifications/read', { body: { all: true } })).status).toBe(401);
    expect(
      (
        await svc.api('POST', '/v1/notifications/read', {
          token: other.admin,
          body: { notificationIds: Array.from({ length: 200 }, (_, i) => `ntf_${i}`) },
        })
      ).status,
    ).toBe(204);
  });
});

describe('retention', () => {
  const day = 24 * 60 * 60 * 1000;
  const ids = (token: string) =>
    list(token).then((r) => ({
      ids: r.body.items.map((i: { notificationId: string }) => i.notificationId),
      unread: r.body.unreadCount,
    }));
  const stored = async (wanted: string[]) =>
    (
      await svc.database.db
        .select({ id: notifications.id })
        .from(notifications)
        .where(inArray(notifications.id, wanted))
    )
      .map((r) => r.id)
      .sort();

  it('deletes notifications past 30 days, read or not, oldest first in chunks; younger ones stay', async () => {
    const token = svc.token(tenantId, 'member', { sub: 'returning' });
    const [oldRead, oldUnread] = await seed(
      tenantId,
      'returning',
      2,
      'incident.created',
      Date.now() - NOTIFICATION_RETENTION_MS - day,
    );
    const [young] = await seed(
      tenantId,
      'returning',
      1,
      'incident.resolved',
      Date.now() - NOTIFICATION_RETENTION_MS + day,
    );
    const elsewhere = await seed(
      other.tenantId,
      'returning',
      1,
      'incident.created',
      Date.now() - NOTIFICATION_RETENTION_MS - day,
    );
    expect(
      (await svc.api('POST', '/v1/notifications/read', { token, body: { notificationIds: [oldRead] } })).status,
    ).toBe(204);
    expect(await ids(token)).toEqual({ ids: [young, oldUnread, oldRead], unread: 2 });

    // Stopped after its first statement of one row: only the oldest of all went.
    let statements = 0;
    expect(
      await purgeNotifications(svc.database.sql, NOTIFICATION_RETENTION_MS, {
        chunkSize: 1,
        shouldStop: () => statements++ > 0,
      }),
    ).toBe(1);
    expect(
      await purgeNotifications(svc.database.sql, NOTIFICATION_RETENTION_MS, { chunkSize: 1 }),
    ).toBeGreaterThanOrEqual(2);
    expect(await stored([oldRead!, oldUnread!, young!, ...elsewhere])).toEqual([young]);
    expect(await ids(token)).toEqual({ ids: [young], unread: 1 });
    expect(await purgeNotifications(svc.database.sql)).toBe(0);
  });

  it('is run by the dispatcher housekeeping', async () => {
    const [old] = await seed(
      tenantId,
      'housekept',
      1,
      'incident.created',
      Date.now() - NOTIFICATION_RETENTION_MS - day,
    );
    const [young] = await seed(tenantId, 'housekept', 1, 'incident.created', Date.now() - day);
    await housekeepUntil(svc, async () => (await stored([old!, young!])).length === 1);
    expect(await stored([old!, young!])).toEqual([young]);
  });
});
