import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { and, eq, sql } from 'drizzle-orm';
import { appendAudit } from '../../db/repositories/audit.js';
import { issueApiKey, listApiKeys, toApiKeyView } from '../../db/repositories/api-keys.js';
import { apiKeys } from '../../db/schema/ingestion.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { ApiKeyList, CreateApiKeyBody, CreatedApiKey, KeyIdParam, ListApiKeysQuery } from '../schemas/api-keys.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';

const createKeyRoute = createRoute({
  method: 'post',
  path: '/v1/api-keys',
  tags: ['api keys'],
  summary: 'Create a webhook API key (the key and its signing secret are shown only here)',
  ...access('admin'),
  request: { body: { required: true, content: { 'application/json': { schema: CreateApiKeyBody } } } },
  responses: { 201: jsonResponse(CreatedApiKey, 'The new key'), ...errorResponses(400, 401, 403, 409) },
});

const listKeysRoute = createRoute({
  method: 'get',
  path: '/v1/api-keys',
  tags: ['api keys'],
  summary: 'List API keys (never their secrets), newest first',
  ...access('admin'),
  request: { query: ListApiKeysQuery },
  responses: { 200: jsonResponse(ApiKeyList, 'A page of keys'), ...errorResponses(400, 401, 403) },
});

const revokeKeyRoute = createRoute({
  method: 'delete',
  path: '/v1/api-keys/{keyId}',
  tags: ['api keys'],
  summary: 'Revoke an API key, effective immediately',
  ...access('admin'),
  request: { params: KeyIdParam },
  responses: { 204: { description: 'Revoked' }, ...errorResponses(401, 403, 404, 409) },
});

export function registerApiKeyRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(createKeyRoute, async (c) => {
    const auth = c.var.auth;
    const { name } = c.req.valid('json');
    const row = await deps.db.transaction(async (tx) => {
      const issued = await issueApiKey(tx, auth.tenantId, name);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'api_key.created',
        targetType: 'api_key',
        targetId: issued.keyId,
        requestId: c.get('requestId'),
        details: { name, prefix: issued.prefix },
      });
      return issued;
    });
    return c.json(
      {
        keyId: row.keyId,
        name,
        key: row.key,
        signingSecret: row.signingSecret,
        prefix: row.prefix,
        createdAt: row.createdAt.toISOString(),
      },
      201,
    );
  });

  app.openapi(listKeysRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const page = await listApiKeys(deps.db, auth.tenantId, query.limit, after);
    return c.json(
      {
        items: page.rows.map(toApiKeyView),
        nextCursor: nextCursor(page.rows, page.hasMore, 'desc'),
      },
      200,
    );
  });

  app.openapi(revokeKeyRoute, async (c) => {
    const auth = c.var.auth;
    const { keyId } = c.req.valid('param');
    await deps.db.transaction(async (tx) => {
      const [row] = await tx
        .select({ revokedAt: apiKeys.revokedAt })
        .from(apiKeys)
        .where(and(eq(apiKeys.id, keyId), eq(apiKeys.tenantId, auth.tenantId)))
        .for('update');
      if (!row) throw new AppError('not_found', 'No API key has that identifier');
      if (row.revokedAt) throw new AppError('conflict', 'The API key is already revoked');
      await tx
        .update(apiKeys)
        .set({ revokedAt: sql`now()` })
        .where(eq(apiKeys.id, keyId));
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'api_key.revoked',
        targetType: 'api_key',
        targetId: keyId,
        requestId: c.get('requestId'),
      });
    });
    return c.body(null, 204);
  });
}
