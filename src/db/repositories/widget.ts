/** Widget keys, settings, sessions, their event log and push subscriptions; every query names its tenant. */
import { and, asc, count, desc, eq, gt, isNull, lte, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { olderThan } from '../keyset.js';
import {
  widgetKeys,
  widgetPushDeliveries,
  widgetPushSubscriptions,
  widgetSessionEvents,
  widgetSessions,
  widgetSettings,
  type WidgetEventType,
  type WidgetPushEventType,
} from '../schema/widget.js';

export type WidgetKeyRow = typeof widgetKeys.$inferSelect;
export type WidgetSessionRow = typeof widgetSessions.$inferSelect;
export type WidgetEventRow = typeof widgetSessionEvents.$inferSelect;
export type WidgetSubscriptionRow = typeof widgetPushSubscriptions.$inferSelect;
type Tx = Pick<Db, 'select' | 'insert' | 'update'>;
/** A real transaction, not the pool: a NOTIFY sent in it is delivered only at its commit. */
type Transaction = Parameters<Parameters<Db['transaction']>[0]>[0];

export interface WidgetTiming {
  inactivitySeconds: number;
  expiryWarningSeconds: number;
}

export const DEFAULT_WIDGET_TIMING: WidgetTiming = { inactivitySeconds: 30 * 60, expiryWarningSeconds: 5 * 60 };

export async function widgetTiming(db: Db, tenantId: string): Promise<WidgetTiming> {
  const [row] = await db.select().from(widgetSettings).where(eq(widgetSettings.tenantId, tenantId));
  return row
    ? { inactivitySeconds: row.inactivitySeconds, expiryWarningSeconds: row.expiryWarningSeconds }
    : DEFAULT_WIDGET_TIMING;
}

export async function saveWidgetTiming(db: Tx, tenantId: string, timing: WidgetTiming, now: Date): Promise<void> {
  await db
    .insert(widgetSettings)
    .values({ tenantId, ...timing, updatedAt: now })
    .onConflictDoUpdate({ target: widgetSettings.tenantId, set: { ...timing, updatedAt: now } });
}

export async function insertWidgetKey(db: Tx, row: typeof widgetKeys.$inferInsert): Promise<WidgetKeyRow> {
  const [created] = await db.insert(widgetKeys).values(row).returning();
  return created!;
}

/** Newest first, keyset over (created_at, id). */
export async function listWidgetKeys(db: Db, tenantId: string, limit: number, after?: { createdAt: Date; id: string }) {
  const rows = await db
    .select()
    .from(widgetKeys)
    .where(
      and(eq(widgetKeys.tenantId, tenantId), after ? olderThan(widgetKeys.createdAt, widgetKeys.id, after) : undefined),
    )
    .orderBy(desc(widgetKeys.createdAt), desc(widgetKeys.id))
    .limit(limit + 1);
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

/** 'revoked' now, 'already' when it was, 'missing' when the tenant has no such key. */
export async function revokeWidgetKey(
  db: Tx,
  tenantId: string,
  keyId: string,
  now: Date,
): Promise<'revoked' | 'already' | 'missing'> {
  const updated = await db
    .update(widgetKeys)
    .set({ revokedAt: now })
    .where(and(eq(widgetKeys.tenantId, tenantId), eq(widgetKeys.id, keyId), isNull(widgetKeys.revokedAt)))
    .returning({ id: widgetKeys.id });
  if (updated.length > 0) return 'revoked';
  const [row] = await db
    .select({ id: widgetKeys.id })
    .from(widgetKeys)
    .where(and(eq(widgetKeys.tenantId, tenantId), eq(widgetKeys.id, keyId)));
  return row ? 'already' : 'missing';
}

export async function activeKeyByHash(db: Db, keyHash: string): Promise<WidgetKeyRow | undefined> {
  const [row] = await db
    .select()
    .from(widgetKeys)
    .where(and(eq(widgetKeys.keyHash, keyHash), isNull(widgetKeys.revokedAt)));
  return row;
}

/**
 * Inserts a session; one opened with a key only while that key has fewer than `maxOpenPerKey`
 * open sessions before their deadline (undefined otherwise). The count and the insert hold the
 * key's advisory lock, so concurrent openings cannot pass the bound together.
 */
export async function insertWidgetSession(
  db: Db,
  row: typeof widgetSessions.$inferInsert & { createdAt: Date },
  maxOpenPerKey: number,
): Promise<WidgetSessionRow | undefined> {
  return db.transaction(async (tx) => {
    if (row.keyId) {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`widget_key:${row.keyId}`}, 0))`);
      const [open] = await tx
        .select({ n: count() })
        .from(widgetSessions)
        .where(
          and(
            eq(widgetSessions.tenantId, row.tenantId),
            eq(widgetSessions.keyId, row.keyId),
            eq(widgetSessions.status, 'open'),
            gt(widgetSessions.expiresAt, row.createdAt),
          ),
        );
      if (open!.n >= maxOpenPerKey) return undefined;
    }
    const [created] = await tx.insert(widgetSessions).values(row).returning();
    return created!;
  });
}

/** The session a token names, whatever its state (the caller judges open and unexpired). */
export async function sessionByTokenHash(db: Db, tokenHash: string): Promise<WidgetSessionRow | undefined> {
  const [row] = await db.select().from(widgetSessions).where(eq(widgetSessions.tokenHash, tokenHash));
  return row;
}

export async function findWidgetSession(
  db: Pick<Db, 'select'>,
  tenantId: string,
  sessionId: string,
): Promise<WidgetSessionRow | undefined> {
  const [row] = await db
    .select()
    .from(widgetSessions)
    .where(and(eq(widgetSessions.tenantId, tenantId), eq(widgetSessions.id, sessionId)));
  return row;
}

/** Moves a live session's inactivity deadline; false when it has closed or expired meanwhile. */
export async function extendWidgetSession(
  tx: Tx,
  args: { tenantId: string; sessionId: string; now: Date; expiresAt: Date; chatSessionId: string },
): Promise<boolean> {
  const updated = await tx
    .update(widgetSessions)
    .set({ lastActivityAt: args.now, expiresAt: args.expiresAt, chatSessionId: args.chatSessionId })
    .where(
      and(
        eq(widgetSessions.tenantId, args.tenantId),
        eq(widgetSessions.id, args.sessionId),
        eq(widgetSessions.status, 'open'),
        gt(widgetSessions.expiresAt, args.now),
      ),
    )
    .returning({ id: widgetSessions.id });
  return updated.length > 0;
}

/**
 * Ends an open session (closed by DELETE, expired by its workflow's timer) and appends its
 * `session.closed` event in the same transaction; false when it had already ended.
 */
export async function endWidgetSession(
  db: Db,
  args: { tenantId: string; sessionId: string; status: 'closed' | 'expired'; reason: string; now: Date },
): Promise<boolean> {
  // An expiry ends only a session whose deadline has passed: a message may have moved it since it was read.
  const due = args.status === 'expired' ? lte(widgetSessions.expiresAt, args.now) : undefined;
  return db.transaction(async (tx) => {
    const updated = await tx
      .update(widgetSessions)
      .set({ status: args.status, closedAt: args.now, closeReason: args.reason })
      .where(
        and(
          eq(widgetSessions.tenantId, args.tenantId),
          eq(widgetSessions.id, args.sessionId),
          eq(widgetSessions.status, 'open'),
          due,
        ),
      )
      .returning({ id: widgetSessions.id });
    if (updated.length === 0) return false;
    await appendWidgetEvent(tx, {
      tenantId: args.tenantId,
      sessionId: args.sessionId,
      type: 'session.closed',
      data: { sessionId: args.sessionId, reason: args.reason, closedAt: args.now.toISOString() },
      now: args.now,
    });
    return true;
  });
}

/** The channel an appended event is notified on (payload: its session id), for the open streams. */
export const WIDGET_EVENTS_CHANNEL = 'widget_events';

/**
 * Appends a session's event and notifies its open streams. Only inside a transaction (its type):
 * the notification is delivered at its commit, once the row is visible.
 */
export async function appendWidgetEvent(
  tx: Transaction,
  args: { tenantId: string; sessionId: string; type: WidgetEventType; data: Record<string, unknown>; now: Date },
): Promise<WidgetEventRow> {
  await tx.execute(sql`select pg_notify(${WIDGET_EVENTS_CHANNEL}, ${args.sessionId})`);
  const [row] = await tx
    .insert(widgetSessionEvents)
    .values({
      tenantId: args.tenantId,
      sessionId: args.sessionId,
      type: args.type,
      data: args.data,
      createdAt: args.now,
    })
    .returning();
  return row!;
}

export async function widgetEventsAfter(
  db: Db,
  args: { tenantId: string; sessionId: string; afterId: number; limit: number },
): Promise<WidgetEventRow[]> {
  return db
    .select()
    .from(widgetSessionEvents)
    .where(
      and(
        eq(widgetSessionEvents.tenantId, args.tenantId),
        eq(widgetSessionEvents.sessionId, args.sessionId),
        gt(widgetSessionEvents.id, args.afterId),
      ),
    )
    .orderBy(asc(widgetSessionEvents.id))
    .limit(args.limit);
}

export async function findWidgetEvent(db: Db, tenantId: string, eventId: number): Promise<WidgetEventRow | undefined> {
  const [row] = await db
    .select()
    .from(widgetSessionEvents)
    .where(and(eq(widgetSessionEvents.tenantId, tenantId), eq(widgetSessionEvents.id, eventId)));
  return row;
}

/**
 * Inserts a subscription while its session has fewer than `max` (of any status; undefined
 * otherwise). The session's row is locked meanwhile, so concurrent subscriptions cannot pass the bound together.
 */
export async function insertWidgetSubscription(
  db: Db,
  row: typeof widgetPushSubscriptions.$inferInsert,
  max: number,
): Promise<WidgetSubscriptionRow | undefined> {
  return db.transaction(async (tx) => {
    await tx
      .select({ id: widgetSessions.id })
      .from(widgetSessions)
      .where(and(eq(widgetSessions.tenantId, row.tenantId), eq(widgetSessions.id, row.sessionId)))
      .for('update');
    const [existing] = await tx
      .select({ n: count() })
      .from(widgetPushSubscriptions)
      .where(
        and(eq(widgetPushSubscriptions.tenantId, row.tenantId), eq(widgetPushSubscriptions.sessionId, row.sessionId)),
      );
    if (existing!.n >= max) return undefined;
    const [created] = await tx.insert(widgetPushSubscriptions).values(row).returning();
    return created!;
  });
}

/** The session's active subscriptions that asked for this event type. */
export async function subscribersOf(
  db: Db,
  args: { tenantId: string; sessionId: string; type: WidgetPushEventType },
): Promise<WidgetSubscriptionRow[]> {
  return db
    .select()
    .from(widgetPushSubscriptions)
    .where(
      and(
        eq(widgetPushSubscriptions.tenantId, args.tenantId),
        eq(widgetPushSubscriptions.sessionId, args.sessionId),
        eq(widgetPushSubscriptions.status, 'active'),
        sql`${widgetPushSubscriptions.events} @> ${JSON.stringify([args.type])}::jsonb`,
      ),
    )
    .orderBy(asc(widgetPushSubscriptions.createdAt));
}

export async function findWidgetSubscription(
  db: Db,
  tenantId: string,
  subscriptionId: string,
): Promise<WidgetSubscriptionRow | undefined> {
  const [row] = await db
    .select()
    .from(widgetPushSubscriptions)
    .where(and(eq(widgetPushSubscriptions.tenantId, tenantId), eq(widgetPushSubscriptions.id, subscriptionId)));
  return row;
}

/**
 * The delivery of one event to one subscription, counted one attempt further: its id is the
 * same on every attempt (the receiver's de-duplication key).
 */
export async function beginWidgetDelivery(
  db: Db,
  args: { id: string; tenantId: string; subscriptionId: string; eventId: number; eventType: WidgetPushEventType },
): Promise<{ id: string; status: string; attempts: number }> {
  const [row] = await db
    .insert(widgetPushDeliveries)
    .values({ ...args, attempts: 1 })
    .onConflictDoUpdate({
      target: [widgetPushDeliveries.subscriptionId, widgetPushDeliveries.eventId],
      set: { attempts: sql`${widgetPushDeliveries.attempts} + 1` },
    })
    .returning({
      id: widgetPushDeliveries.id,
      status: widgetPushDeliveries.status,
      attempts: widgetPushDeliveries.attempts,
    });
  return row!;
}

export async function finishWidgetDelivery(
  db: Db,
  args: {
    tenantId: string;
    deliveryId: string;
    status: 'delivered' | 'pending' | 'failed';
    statusCode: number | null;
    error: string | null;
    now: Date;
  },
): Promise<void> {
  await db
    .update(widgetPushDeliveries)
    .set({
      status: args.status,
      lastStatusCode: args.statusCode,
      lastError: args.error,
      ...(args.status === 'delivered' ? { deliveredAt: args.now } : {}),
    })
    .where(and(eq(widgetPushDeliveries.tenantId, args.tenantId), eq(widgetPushDeliveries.id, args.deliveryId)));
}

export async function disableWidgetSubscription(
  db: Db,
  args: { tenantId: string; subscriptionId: string; reason: string; now: Date },
): Promise<void> {
  await db
    .update(widgetPushSubscriptions)
    .set({ status: 'disabled', disabledReason: args.reason, disabledAt: args.now })
    .where(
      and(
        eq(widgetPushSubscriptions.tenantId, args.tenantId),
        eq(widgetPushSubscriptions.id, args.subscriptionId),
        eq(widgetPushSubscriptions.status, 'active'),
      ),
    );
}
