import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { olderThan } from '../../db/keyset.js';
import { and, count, desc, eq, sql, type SQL } from 'drizzle-orm';
import { generateSigningSecret } from '../../auth/api-keys.js';
import type { Principal } from '../../auth/tokens.js';
import { appendAudit } from '../../db/repositories/audit.js';
import type { Db } from '../../db/client.js';
import { findTenant } from '../../db/repositories/tenants.js';
import { findSkill } from '../../db/repositories/skills.js';
import { findBuiltinSkill } from '../../skills/builtins.js';
import { triggers, type TriggerAction, type TriggerRow } from '../../db/schema/triggers.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import { outboundUrlRefusal } from '../../skills/ssrf.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { urlForViewer } from '../url-view.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  CreateTriggerBody,
  CreatedTrigger,
  ListTriggersQuery,
  TriggerIdParam,
  TriggerList,
  UpdateTriggerBody,
} from '../schemas/triggers.js';

const tags = ['triggers'];
const noSuchTrigger = 'No trigger has that identifier';

/** A trigger as `viewer` may see it: a webhook action's URL query masked for non-admins. */
export function toTriggerView(row: TriggerRow, viewer: Pick<Principal, 'roles'>) {
  const url = (row.actionConfig as { url?: unknown } | null)?.url;
  return {
    triggerId: row.id,
    name: row.name,
    eventType: row.eventType,
    conditions: row.conditions,
    action: row.action,
    actionConfig: typeof url === 'string' ? { ...row.actionConfig, url: urlForViewer(url, viewer) } : row.actionConfig,
    enabled: row.enabled,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

const configSchemas: Record<TriggerAction, z.ZodType<Record<string, unknown>>> = {
  notify: z.object({}).strict(),
  start_investigation: z.object({}).strict(),
  invoke_skill: z.object({ skillId: z.string().min(1).max(100), input: z.unknown().optional() }).strict(),
  webhook: z.object({ url: z.string().url().max(2048) }).strict(),
};

/** The action's config, checked for the action and the tenant (webhook urls: https unless allowHttpSkills). */
async function checkActionConfig(
  deps: AppDeps,
  db: Pick<Db, 'select'>,
  tenantId: string,
  action: TriggerAction,
  config: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const parsed = configSchemas[action].safeParse(config);
  if (!parsed.success) {
    const details = parsed.error.issues.map((i) => ({
      path: ['actionConfig', ...i.path.map(String)].join('.'),
      message: i.message,
    }));
    throw new AppError('validation_error', details.map((d) => `${d.path}: ${d.message}`).join('; '), details);
  }
  if (action === 'webhook') {
    // The skill URL rules: judged here as far as the URL alone tells, on delivery too.
    const tenant = await findTenant(db, tenantId);
    const message = outboundUrlRefusal(new URL(String(parsed.data.url)), {
      allowHttp: tenant?.settings.allowHttpSkills === true,
      allowlist: deps.skills.allowlist,
    });
    if (message)
      throw new AppError('validation_error', `actionConfig.url: ${message}`, [{ path: 'actionConfig.url', message }]);
  }
  if (action === 'invoke_skill') {
    // The skill named must be one the tenant can call (a builtin or its own), as an edge's ends
    // must be its services: another tenant's skill, or none, is 404.
    const skillId = String(parsed.data.skillId);
    if (!findBuiltinSkill(skillId) && !(await findSkill(db, tenantId, skillId))) {
      throw new AppError('skill_not_found', `actionConfig.skillId: no skill of this tenant has the id ${skillId}`, [
        { path: 'actionConfig.skillId', message: 'no skill of this tenant has this id' },
      ]);
    }
  }
  return parsed.data;
}

const listTriggersRoute = createRoute({
  method: 'get',
  path: '/v1/triggers',
  tags,
  summary: 'List triggers, newest first',
  ...access('member'),
  request: { query: ListTriggersQuery },
  responses: { 200: jsonResponse(TriggerList, 'A page of triggers'), ...errorResponses(400, 401, 403) },
});

const createTriggerRoute = createRoute({
  method: 'post',
  path: '/v1/triggers',
  tags,
  summary: 'Create a trigger (admin); a webhook trigger’s signing secret is returned once',
  ...access('admin'),
  request: { body: { required: true, content: { 'application/json': { schema: CreateTriggerBody } } } },
  responses: { 201: jsonResponse(CreatedTrigger, 'The new trigger'), ...errorResponses(400, 401, 403, 404) },
});

const updateTriggerRoute = createRoute({
  method: 'patch',
  path: '/v1/triggers/{triggerId}',
  tags,
  summary: 'Change a trigger (admin): enabled, conditions, action, actionConfig, name',
  description:
    'Switching to `webhook` creates a signing secret, returned once as `signingSecret`; switching away drops it.',
  ...access('admin'),
  request: {
    params: TriggerIdParam,
    body: { required: true, content: { 'application/json': { schema: UpdateTriggerBody } } },
  },
  responses: { 200: jsonResponse(CreatedTrigger, 'The updated trigger'), ...errorResponses(400, 401, 403, 404) },
});

const deleteTriggerRoute = createRoute({
  method: 'delete',
  path: '/v1/triggers/{triggerId}',
  tags,
  summary: 'Delete a trigger (admin)',
  ...access('admin'),
  request: { params: TriggerIdParam },
  responses: { 204: { description: 'Deleted' }, ...errorResponses(400, 401, 403, 404) },
});

/**
 * A tenant's triggers: rules that run an action when an event of the catalogue is appended.
 * Members and admins list them; admins create, change and delete them.
 */
export function registerTriggerRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(listTriggersRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const filters: SQL[] = [eq(triggers.tenantId, auth.tenantId)];
    if (query.enabled !== undefined) filters.push(eq(triggers.enabled, query.enabled));
    if (query.eventType) filters.push(eq(triggers.eventType, query.eventType));
    const where = and(...filters);
    const pageWhere = after ? and(where, olderThan(triggers.createdAt, triggers.id, after)) : where;
    const [rows, totals] = await Promise.all([
      deps.db
        .select()
        .from(triggers)
        .where(pageWhere)
        .orderBy(desc(triggers.createdAt), desc(triggers.id))
        .limit(query.limit + 1),
      deps.db.select({ total: count() }).from(triggers).where(where),
    ]);
    const page = rows.slice(0, query.limit);
    return c.json(
      {
        items: page.map((row) => toTriggerView(row, auth)),
        total: totals[0]?.total ?? 0,
        nextCursor: nextCursor(page, rows.length > query.limit),
      },
      200,
    );
  });

  app.openapi(createTriggerRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const actionConfig = await checkActionConfig(deps, deps.db, auth.tenantId, body.action, body.actionConfig);
    const secret = body.action === 'webhook' ? generateSigningSecret() : null;
    const row = await deps.db.transaction(async (tx) => {
      const [created] = await tx
        .insert(triggers)
        .values({
          id: newId('trg'),
          tenantId: auth.tenantId,
          name: body.name,
          eventType: body.eventType,
          conditions: body.conditions,
          action: body.action,
          actionConfig,
          secret,
          enabled: body.enabled,
        })
        .returning();
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'trigger.created',
        targetType: 'trigger',
        targetId: created!.id,
        requestId: c.get('requestId'),
        details: { name: created!.name, eventType: created!.eventType, action: created!.action },
      });
      return created!;
    });
    return c.json({ ...toTriggerView(row, auth), ...(secret ? { signingSecret: secret } : {}) }, 201);
  });

  app.openapi(updateTriggerRoute, async (c) => {
    const auth = c.var.auth;
    const { triggerId } = c.req.valid('param');
    const body = c.req.valid('json');
    // Read and written under the row's lock: a concurrent change (another admin switching the
    // action) is seen, so a webhook trigger never ends up without its secret.
    const { row, newSecret } = await deps.db.transaction(async (tx) => {
      const [current] = await tx
        .select()
        .from(triggers)
        .where(and(eq(triggers.tenantId, auth.tenantId), eq(triggers.id, triggerId)))
        .for('update');
      if (!current) throw new AppError('not_found', noSuchTrigger);
      const action = body.action ?? current.action;
      const actionChanged = action !== current.action;
      const actionConfig =
        body.actionConfig !== undefined || actionChanged
          ? await checkActionConfig(
              deps,
              tx,
              auth.tenantId,
              action,
              body.actionConfig ?? (actionChanged ? {} : current.actionConfig),
            )
          : undefined;
      const secret = action === 'webhook' && !current.secret ? generateSigningSecret() : undefined;
      const [updated] = await tx
        .update(triggers)
        .set({
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
          ...(body.conditions !== undefined ? { conditions: body.conditions } : {}),
          ...(actionChanged ? { action } : {}),
          ...(actionConfig !== undefined ? { actionConfig } : {}),
          ...(secret ? { secret } : action !== 'webhook' ? { secret: null } : {}),
          updatedAt: sql`now()`,
        })
        .where(and(eq(triggers.tenantId, auth.tenantId), eq(triggers.id, triggerId)))
        .returning();
      if (!updated) throw new AppError('not_found', noSuchTrigger);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'trigger.updated',
        targetType: 'trigger',
        targetId: triggerId,
        requestId: c.get('requestId'),
        details: { fields: Object.keys(body).filter((k) => body[k as keyof typeof body] !== undefined) },
      });
      return { row: updated, newSecret: secret };
    });
    return c.json({ ...toTriggerView(row, auth), ...(newSecret ? { signingSecret: newSecret } : {}) }, 200);
  });

  app.openapi(deleteTriggerRoute, async (c) => {
    const auth = c.var.auth;
    const { triggerId } = c.req.valid('param');
    await deps.db.transaction(async (tx) => {
      const [removed] = await tx
        .delete(triggers)
        .where(and(eq(triggers.tenantId, auth.tenantId), eq(triggers.id, triggerId)))
        .returning({ name: triggers.name });
      if (!removed) throw new AppError('not_found', noSuchTrigger);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'trigger.deleted',
        targetType: 'trigger',
        targetId: triggerId,
        requestId: c.get('requestId'),
        details: { name: removed.name },
      });
    });
    return c.body(null, 204);
  });
}
