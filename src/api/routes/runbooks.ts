import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { and, eq, sql } from 'drizzle-orm';
import { appendAudit } from '../../db/repositories/audit.js';
import { findRunbook, listRunbooks, toRunbookSummary, toRunbookView } from '../../db/repositories/runbooks.js';
import { runbooks } from '../../db/schema/investigation.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  CreateRunbookBody,
  ListRunbooksQuery,
  Runbook,
  RunbookIdParam,
  RunbookList,
  UpdateRunbookBody,
} from '../schemas/runbooks.js';

const tags = ['runbooks'];
const noSuchRunbook = 'No runbook has that identifier';

const createRunbookRoute = createRoute({
  method: 'post',
  path: '/v1/runbooks',
  tags,
  summary: 'Add a runbook (markdown steps, optionally for one service)',
  ...access('member'),
  request: { body: { required: true, content: { 'application/json': { schema: CreateRunbookBody } } } },
  responses: { 201: jsonResponse(Runbook, 'The new runbook, with its parsed steps'), ...errorResponses(400, 401, 403) },
});

const listRunbooksRoute = createRoute({
  method: 'get',
  path: '/v1/runbooks',
  tags,
  summary: 'List runbooks, newest first (without their content)',
  ...access('member'),
  request: { query: ListRunbooksQuery },
  responses: { 200: jsonResponse(RunbookList, 'A page of runbooks'), ...errorResponses(400, 401, 403) },
});

const getRunbookRoute = createRoute({
  method: 'get',
  path: '/v1/runbooks/{runbookId}',
  tags,
  summary: 'Get one runbook with its content and parsed steps',
  ...access('member'),
  request: { params: RunbookIdParam },
  responses: { 200: jsonResponse(Runbook, 'The runbook'), ...errorResponses(400, 401, 403, 404) },
});

const updateRunbookRoute = createRoute({
  method: 'patch',
  path: '/v1/runbooks/{runbookId}',
  tags,
  summary: "Change a runbook's title, service, tags or content",
  ...access('member'),
  request: {
    params: RunbookIdParam,
    body: { required: true, content: { 'application/json': { schema: UpdateRunbookBody } } },
  },
  responses: { 200: jsonResponse(Runbook, 'The updated runbook'), ...errorResponses(400, 401, 403, 404) },
});

const deleteRunbookRoute = createRoute({
  method: 'delete',
  path: '/v1/runbooks/{runbookId}',
  tags,
  summary: 'Remove a runbook (admin)',
  ...access('admin'),
  request: { params: RunbookIdParam },
  responses: { 204: { description: 'Removed' }, ...errorResponses(400, 401, 403, 404) },
});

/**
 * A tenant's runbooks, which investigations cite as evidence and in recommended actions.
 * Members and admins read, create and edit them; only admins delete one.
 */
export function registerRunbookRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(createRunbookRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const row = await deps.db.transaction(async (tx) => {
      const [created] = await tx
        .insert(runbooks)
        .values({
          id: newId('rbk'),
          tenantId: auth.tenantId,
          title: body.title,
          service: body.service ?? null,
          tags: body.tags,
          content: body.content,
        })
        .returning();
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'runbook.created',
        targetType: 'runbook',
        targetId: created!.id,
        requestId: c.get('requestId'),
        details: { title: created!.title, service: created!.service, tags: created!.tags },
      });
      return created!;
    });
    return c.json(toRunbookView(row), 201);
  });

  app.openapi(listRunbooksRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const page = await listRunbooks(deps.db, auth.tenantId, {
      ...(query.service ? { service: query.service } : {}),
      ...(query.tag ? { tag: query.tag } : {}),
      ...(query.q ? { q: query.q } : {}),
      limit: query.limit,
      ...(after ? { after } : {}),
    });
    return c.json(
      {
        items: page.rows.map(toRunbookSummary),
        total: page.total,
        nextCursor: nextCursor(page.rows, page.hasMore, 'desc'),
      },
      200,
    );
  });

  app.openapi(getRunbookRoute, async (c) => {
    const auth = c.var.auth;
    const row = await findRunbook(deps.db, auth.tenantId, c.req.valid('param').runbookId);
    if (!row) throw new AppError('not_found', noSuchRunbook);
    return c.json(toRunbookView(row), 200);
  });

  app.openapi(updateRunbookRoute, async (c) => {
    const auth = c.var.auth;
    const { runbookId } = c.req.valid('param');
    const body = c.req.valid('json');
    const changes = {
      ...(body.title !== undefined ? { title: body.title } : {}),
      ...(body.service !== undefined ? { service: body.service } : {}),
      ...(body.tags !== undefined ? { tags: body.tags } : {}),
      ...(body.content !== undefined ? { content: body.content } : {}),
    };
    const row = await deps.db.transaction(async (tx) => {
      const [updated] = await tx
        .update(runbooks)
        .set({ ...changes, updatedAt: sql`now()` })
        .where(and(eq(runbooks.tenantId, auth.tenantId), eq(runbooks.id, runbookId)))
        .returning();
      if (!updated) throw new AppError('not_found', noSuchRunbook);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'runbook.updated',
        targetType: 'runbook',
        targetId: runbookId,
        requestId: c.get('requestId'),
        // The content may be 50,000 characters: the audit names the fields changed, not the text.
        details: { fields: Object.keys(changes), title: updated.title },
      });
      return updated;
    });
    return c.json(toRunbookView(row), 200);
  });

  app.openapi(deleteRunbookRoute, async (c) => {
    const auth = c.var.auth;
    const { runbookId } = c.req.valid('param');
    await deps.db.transaction(async (tx) => {
      const [removed] = await tx
        .delete(runbooks)
        .where(and(eq(runbooks.tenantId, auth.tenantId), eq(runbooks.id, runbookId)))
        .returning({ title: runbooks.title, service: runbooks.service });
      if (!removed) throw new AppError('not_found', noSuchRunbook);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'runbook.deleted',
        targetType: 'runbook',
        targetId: runbookId,
        requestId: c.get('requestId'),
        details: { title: removed.title, service: removed.service },
      });
    });
    return c.body(null, 204);
  });
}
