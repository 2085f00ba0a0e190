import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { appendAudit } from '../../db/repositories/audit.js';
import {
  insertWidgetKey,
  listWidgetKeys,
  revokeWidgetKey,
  saveWidgetTiming,
  widgetTiming,
  type WidgetKeyRow,
} from '../../db/repositories/widget.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import { canonicalOrigin, newPublishableKey } from '../../widget/credentials.js';
import type { WidgetApiSettings } from '../../widget/sessions.js';
import type { AppDeps, AppEnv } from '../context.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  CreatedWidgetKey,
  CreateWidgetKeyBody,
  ListWidgetKeysQuery,
  WidgetKeyIdParam,
  WidgetKeyList,
  WidgetSettingsSchema,
} from '../schemas/widget.js';

const tags = ['widget'];
/** The longest inactivity a tenant may set: a day. */
const MAX_INACTIVITY_SECONDS = 86_400;

const createKeyRoute = createRoute({
  method: 'post',
  path: '/v1/widget/keys',
  tags,
  summary: 'Create a publishable widget key (the key is shown once)',
  description:
    'A `wpk_…` key that opens widget sessions from the listed browser origins only (checked against `Origin`). Only its hash is stored.',
  ...access('admin'),
  request: { body: { required: true, content: { 'application/json': { schema: CreateWidgetKeyBody } } } },
  responses: { 201: jsonResponse(CreatedWidgetKey, 'The key, shown once'), ...errorResponses(400, 401, 403) },
});

const listKeysRoute = createRoute({
  method: 'get',
  path: '/v1/widget/keys',
  tags,
  summary: 'List the tenant’s widget keys, newest first',
  ...access('admin'),
  request: { query: ListWidgetKeysQuery },
  responses: { 200: jsonResponse(WidgetKeyList, 'A page of widget keys'), ...errorResponses(400, 401, 403) },
});

const revokeKeyRoute = createRoute({
  method: 'delete',
  path: '/v1/widget/keys/{keyId}',
  tags,
  summary: 'Revoke a widget key (sessions it opened run on until they end)',
  ...access('admin'),
  request: { params: WidgetKeyIdParam },
  responses: { 204: { description: 'Revoked' }, ...errorResponses(401, 403, 404, 409) },
});

const getSettingsRoute = createRoute({
  method: 'get',
  path: '/v1/widget/settings',
  tags,
  summary: 'The tenant’s widget session timing',
  ...access('admin'),
  responses: { 200: jsonResponse(WidgetSettingsSchema, 'The timing'), ...errorResponses(401, 403) },
});

const putSettingsRoute = createRoute({
  method: 'put',
  path: '/v1/widget/settings',
  tags,
  summary: 'Set the tenant’s widget session timing (applies to sessions opened after)',
  ...access('admin'),
  request: { body: { required: true, content: { 'application/json': { schema: WidgetSettingsSchema } } } },
  responses: { 200: jsonResponse(WidgetSettingsSchema, 'The timing'), ...errorResponses(400, 401, 403) },
});

const toKeyView = (row: WidgetKeyRow) => ({
  keyId: row.id,
  name: row.name,
  prefix: row.keyPrefix,
  allowedOrigins: row.allowedOrigins,
  createdAt: row.createdAt.toISOString(),
  revokedAt: row.revokedAt?.toISOString() ?? null,
});

function origins(values: string[]): string[] {
  const canonical = values.map((v) => {
    // A browser's Origin never holds `*`: such an entry would silently match nothing.
    if (v.includes('*'))
      throw new AppError('validation_error', `allowedOrigins: ${v} is a wildcard; list each origin the widget runs on`);
    const origin = canonicalOrigin(v);
    if (!origin)
      throw new AppError(
        'validation_error',
        `allowedOrigins: ${v} is not an origin (https://host[:port], no path; http only for localhost)`,
      );
    return origin;
  });
  return [...new Set(canonical)];
}

/** Publishable widget keys and the tenant's widget session timing: admins only. */
export function registerWidgetKeyRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps, settings: WidgetApiSettings): void {
  app.openapi(createKeyRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const allowedOrigins = origins(body.allowedOrigins);
    const { key, hash, prefix } = newPublishableKey();
    const row = await deps.db.transaction(async (tx) => {
      const created = await insertWidgetKey(tx, {
        id: newId('wkey'),
        tenantId: auth.tenantId,
        name: body.name,
        keyHash: hash,
        keyPrefix: prefix,
        allowedOrigins,
        createdBy: auth.userId,
        createdAt: deps.clock(),
      });
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'widget_key.created',
        targetType: 'widget_key',
        targetId: created.id,
        requestId: c.get('requestId'),
        details: { name: body.name, prefix, allowedOrigins },
      });
      return created;
    });
    return c.json({ ...toKeyView(row), key }, 201);
  });

  app.openapi(listKeysRoute, async (c) => {
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const page = await listWidgetKeys(deps.db, c.var.auth.tenantId, query.limit, after);
    return c.json({ items: page.rows.map(toKeyView), nextCursor: nextCursor(page.rows, page.hasMore, 'desc') }, 200);
  });

  app.openapi(revokeKeyRoute, async (c) => {
    const auth = c.var.auth;
    const { keyId } = c.req.valid('param');
    await deps.db.transaction(async (tx) => {
      const outcome = await revokeWidgetKey(tx, auth.tenantId, keyId, deps.clock());
      if (outcome === 'missing') throw new AppError('not_found', 'No widget key has that identifier');
      if (outcome === 'already') throw new AppError('conflict', 'The widget key is already revoked');
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'widget_key.revoked',
        targetType: 'widget_key',
        targetId: keyId,
        requestId: c.get('requestId'),
      });
    });
    return c.body(null, 204);
  });

  app.openapi(getSettingsRoute, async (c) => {
    const timing = await widgetTiming(deps.db, c.var.auth.tenantId);
    return c.json(
      { sessionInactivitySeconds: timing.inactivitySeconds, expiryWarningSeconds: timing.expiryWarningSeconds },
      200,
    );
  });

  app.openapi(putSettingsRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const min = settings.minInactivitySeconds;
    if (body.sessionInactivitySeconds < min || body.sessionInactivitySeconds > MAX_INACTIVITY_SECONDS)
      throw new AppError(
        'validation_error',
        `sessionInactivitySeconds must be between ${min} and ${MAX_INACTIVITY_SECONDS}`,
      );
    if (body.expiryWarningSeconds >= body.sessionInactivitySeconds)
      throw new AppError('validation_error', 'expiryWarningSeconds must be less than sessionInactivitySeconds');
    const timing = {
      inactivitySeconds: body.sessionInactivitySeconds,
      expiryWarningSeconds: body.expiryWarningSeconds,
    };
    await deps.db.transaction(async (tx) => {
      await saveWidgetTiming(tx, auth.tenantId, timing, deps.clock());
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'widget_settings.updated',
        targetType: 'tenant',
        targetId: auth.tenantId,
        requestId: c.get('requestId'),
        details: timing,
      });
    });
    return c.json(body, 200);
  });
}
