import { appendAudit } from '../../db/repositories/audit.js';
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { olderThan } from '../../db/keyset.js';
import { and, count, desc, eq, inArray, isNotNull, isNull, sql, type SQL } from 'drizzle-orm';
import { notifications } from '../../db/schema/remediation.js';
import { describeEvent } from '../../notifications/describe.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  findPreferences,
  savePreferences,
  type NotificationPreferences as Stored,
} from '../../db/repositories/notifications.js';
import {
  ListNotificationsQuery,
  MarkNotificationsReadBody,
  NotificationList,
  NotificationPreferences,
  PutNotificationPreferencesBody,
} from '../schemas/notifications.js';

const tags = ['notifications'];

type NotificationRow = typeof notifications.$inferSelect;

const text = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** The api shape; rows written without a title/body (approval requests) get one from their type. */
export function toNotificationView(row: NotificationRow) {
  const fallback =
    text(row.payload.title) && typeof row.payload.body === 'string' ? null : describeEvent(row.type, row.payload);
  return {
    notificationId: row.id,
    type: row.type,
    title: text(row.payload.title) ?? fallback?.title ?? row.type,
    body: typeof row.payload.body === 'string' ? row.payload.body : (fallback?.body ?? ''),
    read: row.readAt !== null,
    incidentId: row.incidentId ?? text(row.payload.incidentId),
    remediationId: text(row.payload.remediationId),
    approvalId: text(row.payload.approvalId),
    createdAt: row.createdAt.toISOString(),
  };
}

const listNotificationsRoute = createRoute({
  method: 'get',
  path: '/v1/notifications',
  tags,
  summary: 'Notifications of the current user, most recent first',
  ...access('member'),
  request: { query: ListNotificationsQuery },
  responses: {
    200: jsonResponse(NotificationList, 'A page of notifications and the unread count'),
    ...errorResponses(400, 401, 403),
  },
});

const markReadRoute = createRoute({
  method: 'post',
  path: '/v1/notifications/read',
  tags,
  summary: "Mark the caller's notifications read: the given ids, or all",
  description: "Ids that are not the caller's own (or do not exist) are ignored.",
  ...access('member'),
  request: { body: { required: true, content: { 'application/json': { schema: MarkNotificationsReadBody } } } },
  responses: { 204: { description: 'Marked read' }, ...errorResponses(400, 401, 403) },
});

const preferencesDescription =
  'Your own preferences: event types switched off and the lowest incident severity notified to you. They only take away from what the rules send you (docs/api.md, Notifications); the event stream is not filtered by them.';

const getPreferencesRoute = createRoute({
  method: 'get',
  path: '/v1/notifications/preferences',
  tags,
  summary: "The caller's notification preferences (the defaults when none are saved)",
  description: preferencesDescription,
  ...access('member'),
  responses: {
    200: jsonResponse(NotificationPreferences, 'The preferences'),
    ...errorResponses(401, 403),
  },
});

const putPreferencesRoute = createRoute({
  method: 'put',
  path: '/v1/notifications/preferences',
  tags,
  summary: "Replace the caller's notification preferences",
  description: preferencesDescription,
  ...access('member'),
  request: {
    body: { required: true, content: { 'application/json': { schema: PutNotificationPreferencesBody } } },
  },
  responses: {
    200: jsonResponse(NotificationPreferences, 'The preferences as saved'),
    ...errorResponses(400, 401, 403),
  },
});

const toPreferencesView = (p: Stored) => ({
  disabledTypes: p.disabledTypes,
  minSeverity: p.minSeverity,
  updatedAt: p.updatedAt?.toISOString() ?? null,
});

/** The caller's own notifications (token subject within its tenant): list them, mark them read, choose what comes. */
export function registerNotificationRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(getPreferencesRoute, async (c) => {
    const auth = c.var.auth;
    return c.json(toPreferencesView(await findPreferences(deps.db, auth.tenantId, auth.userId)), 200);
  });

  app.openapi(putPreferencesRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const wanted = { disabledTypes: [...new Set(body.disabledTypes)].sort(), minSeverity: body.minSeverity };
    const saved = await deps.db.transaction(async (tx) => {
      const row = await savePreferences(tx, auth.tenantId, auth.userId, wanted);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'notification_preferences.updated',
        targetType: 'user',
        targetId: auth.userId,
        requestId: c.get('requestId'),
        details: wanted,
      });
      return row;
    });
    return c.json(toPreferencesView(saved), 200);
  });

  app.openapi(listNotificationsRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const mine = and(eq(notifications.tenantId, auth.tenantId), eq(notifications.userId, auth.userId))!;
    const filters: SQL[] = [mine];
    if (query.read !== undefined)
      filters.push(query.read ? isNotNull(notifications.readAt) : isNull(notifications.readAt));
    if (query.type) filters.push(eq(notifications.type, query.type));
    if (after) {
      filters.push(olderThan(notifications.createdAt, notifications.id, after));
    }
    const [rows, unread] = await Promise.all([
      deps.db
        .select()
        .from(notifications)
        .where(and(...filters))
        .orderBy(desc(notifications.createdAt), desc(notifications.id))
        .limit(query.limit + 1),
      deps.db
        .select({ n: count() })
        .from(notifications)
        .where(and(mine, isNull(notifications.readAt))),
    ]);
    const page = rows.slice(0, query.limit);
    return c.json(
      {
        items: page.map(toNotificationView),
        unreadCount: unread[0]?.n ?? 0,
        nextCursor: nextCursor(page, rows.length > query.limit),
      },
      200,
    );
  });

  app.openapi(markReadRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const filters: SQL[] = [
      eq(notifications.tenantId, auth.tenantId),
      eq(notifications.userId, auth.userId),
      isNull(notifications.readAt),
    ];
    if (body.notificationIds) filters.push(inArray(notifications.id, [...new Set(body.notificationIds)]));
    await deps.db.transaction(async (tx) => {
      const marked = await tx
        .update(notifications)
        .set({ readAt: sql`now()` })
        .where(and(...filters))
        .returning({ id: notifications.id });
      if (marked.length === 0) return;
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'notification.read',
        targetType: 'user',
        targetId: auth.userId,
        requestId: c.get('requestId'),
        details: { count: marked.length, all: body.all === true },
      });
    });
    return c.body(null, 204);
  });
}
