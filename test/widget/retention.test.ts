import { eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeWidgetSessions, WIDGET_SESSION_KEPT_MS } from '../../src/db/repositories/widget-retention.js';
import {
  widgetPushDeliveries,
  widgetPushSubscriptions,
  widgetSessionEvents,
  widgetSessions,
} from '../../src/db/schema/widget.js';
import { newId } from '../../src/ids.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
});
afterAll(async () => {
  await svc?.stop();
});

const DAY = 24 * 60 * 60 * 1000;

/** A session whose deadline was `ago` ms back, with one event, one subscription and one delivery. */
async function sessionEnded(tenantId: string, ago: number) {
  const db = svc.database.db;
  const expiresAt = new Date(Date.now() - ago);
  const sessionId = newId('wsess');
  await db.insert(widgetSessions).values({
    id: sessionId,
    tenantId,
    tokenHash: newId('req'),
    status: 'expired',
    inactivitySeconds: 1800,
    expiryWarningSeconds: 300,
    lastActivityAt: new Date(expiresAt.getTime() - 1800_000),
    expiresAt,
    closedAt: expiresAt,
  });
  const [event] = await db
    .insert(widgetSessionEvents)
    .values({
      tenantId,
      sessionId,
      type: 'message.complete',
      data: { reply: 'The payments DB ran out of connections' },
    })
    .returning({ id: widgetSessionEvents.id });
  const subscriptionId = newId('wsub');
  await db.insert(widgetPushSubscriptions).values({
    id: subscriptionId,
    tenantId,
    sessionId,
    url: 'https://hooks.example.com/widget',
    events: ['message.complete'],
  });
  await db.insert(widgetPushDeliveries).values({
    id: newId('wdel'),
    tenantId,
    subscriptionId,
    eventId: event!.id,
    eventType: 'message.complete',
    status: 'delivered',
  });
  return { sessionId, subscriptionId };
}

describe('widget session retention', () => {
  it('purges sessions 30 days past their deadline with their events and pushes, and keeps younger ones', async () => {
    const { tenantId } = await svc.newTenant();
    const old = await sessionEnded(tenantId, WIDGET_SESSION_KEPT_MS + DAY);
    const recent = await sessionEnded(tenantId, WIDGET_SESSION_KEPT_MS - DAY);
    const db = svc.database.db;

    expect(
      await purgeWidgetSessions(svc.database.sql, WIDGET_SESSION_KEPT_MS, { chunkSize: 1 }),
    ).toBeGreaterThanOrEqual(1);

    const sessions = await db
      .select({ id: widgetSessions.id })
      .from(widgetSessions)
      .where(inArray(widgetSessions.id, [old.sessionId, recent.sessionId]));
    expect(sessions.map((s) => s.id)).toEqual([recent.sessionId]);
    const events = await db
      .select({ sessionId: widgetSessionEvents.sessionId })
      .from(widgetSessionEvents)
      .where(eq(widgetSessionEvents.tenantId, tenantId));
    expect(events.map((e) => e.sessionId)).toEqual([recent.sessionId]);
    const subscriptions = await db
      .select({ id: widgetPushSubscriptions.id })
      .from(widgetPushSubscriptions)
      .where(eq(widgetPushSubscriptions.tenantId, tenantId));
    expect(subscriptions.map((s) => s.id)).toEqual([recent.subscriptionId]);
    const deliveries = await db
      .select({ subscriptionId: widgetPushDeliveries.subscriptionId })
      .from(widgetPushDeliveries)
      .where(eq(widgetPushDeliveries.tenantId, tenantId));
    expect(deliveries.map((d) => d.subscriptionId)).toEqual([recent.subscriptionId]);

    // Nothing left due: a second run deletes nothing of this tenant's.
    await purgeWidgetSessions(svc.database.sql);
    expect(
      await db.select({ id: widgetSessions.id }).from(widgetSessions).where(eq(widgetSessions.tenantId, tenantId)),
    ).toEqual([{ id: recent.sessionId }]);
  });
});
