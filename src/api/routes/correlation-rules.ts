import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { appendAudit } from '../../db/repositories/audit.js';
import {
  MAX_RULES_PER_TENANT,
  countRules,
  deleteRule,
  findRule,
  findRuleByName,
  insertRule,
  listRules,
  lockTenantRules,
  toRuleView,
  updateRule,
  type RuleCursor,
  type RuleFields,
} from '../../db/repositories/correlation-rules.js';
import { LAST_STORABLE_TIME } from '../../ingest/normalize.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  CorrelationRule,
  CorrelationRuleList,
  CreateCorrelationRuleBody,
  ListCorrelationRulesQuery,
  RuleIdParam,
  UpdateCorrelationRuleBody,
} from '../schemas/correlation-rules.js';

const tags = ['correlation rules'];
const noSuchRule = 'No correlation rule has that identifier';
const ROW_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Rules page in evaluation order, so the cursor holds `order` beside the creation time and id:
 * base64url of `[order, createdAt, id]`, opaque to clients like the other lists' cursors.
 */
export function encodeRuleCursor(c: RuleCursor): string {
  return Buffer.from(JSON.stringify([c.order, c.createdAt.toISOString(), c.id])).toString('base64url');
}

export function decodeRuleCursor(value: string): RuleCursor {
  try {
    if (/^[A-Za-z0-9_-]+$/.test(value)) {
      const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
      if (Array.isArray(parsed) && parsed.length === 3) {
        const [order, createdAt, id] = parsed as unknown[];
        const date = new Date(String(createdAt));
        const storable = date.getTime() >= 0 && date.getTime() < LAST_STORABLE_TIME && date.toISOString() === createdAt;
        if (Number.isInteger(order) && typeof id === 'string' && ROW_ID.test(id) && storable)
          return { order: order as number, createdAt: date, id };
      }
    }
  } catch {
    // not JSON: refused below like any other malformed cursor
  }
  throw new AppError('validation_error', 'cursor is not valid', [{ path: 'cursor', message: 'cursor is not valid' }]);
}

const listRoute = createRoute({
  method: 'get',
  path: '/v1/correlation-rules',
  tags,
  summary: 'List correlation rules in evaluation order (order, then creation)',
  ...access('member'),
  request: { query: ListCorrelationRulesQuery },
  responses: { 200: jsonResponse(CorrelationRuleList, 'A page of rules'), ...errorResponses(400, 401, 403) },
});

const createRuleRoute = createRoute({
  method: 'post',
  path: '/v1/correlation-rules',
  tags,
  summary: 'Create a correlation rule (admin)',
  description: `A tenant holds at most ${MAX_RULES_PER_TENANT} rules (409 past it); names are unique in the tenant (409).`,
  ...access('admin'),
  request: { body: { required: true, content: { 'application/json': { schema: CreateCorrelationRuleBody } } } },
  responses: { 201: jsonResponse(CorrelationRule, 'The new rule'), ...errorResponses(400, 401, 403, 409) },
});

const getRuleRoute = createRoute({
  method: 'get',
  path: '/v1/correlation-rules/{ruleId}',
  tags,
  summary: 'Get a correlation rule, with its match count and whether it is stale',
  ...access('member'),
  request: { params: RuleIdParam },
  responses: { 200: jsonResponse(CorrelationRule, 'The rule'), ...errorResponses(401, 403, 404) },
});

const updateRuleRoute = createRoute({
  method: 'patch',
  path: '/v1/correlation-rules/{ruleId}',
  tags,
  summary: 'Change a correlation rule (admin); a given `match` replaces the whole match',
  ...access('admin'),
  request: {
    params: RuleIdParam,
    body: { required: true, content: { 'application/json': { schema: UpdateCorrelationRuleBody } } },
  },
  responses: { 200: jsonResponse(CorrelationRule, 'The updated rule'), ...errorResponses(400, 401, 403, 404, 409) },
});

const deleteRuleRoute = createRoute({
  method: 'delete',
  path: '/v1/correlation-rules/{ruleId}',
  tags,
  summary: 'Delete a correlation rule (admin)',
  ...access('admin'),
  request: { params: RuleIdParam },
  responses: { 204: { description: 'Deleted' }, ...errorResponses(401, 403, 404) },
});

const toDate = (value: string | null) => (value === null ? null : new Date(value));

/** The body's given fields as columns (`undefined` left out, so PATCH keeps the rest). */
function fieldsOf(body: Partial<Record<keyof RuleFields, unknown>>): Partial<RuleFields> {
  const fields: Partial<RuleFields> = {};
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue;
    const column = key as keyof RuleFields;
    (fields as Record<string, unknown>)[column] =
      column === 'activeFrom' || column === 'activeUntil' ? toDate(value as string | null) : value;
  }
  return fields;
}

/**
 * A tenant's correlation rules: members read them, admins write them. Every write is audited and
 * takes the tenant's rule lock, so the cap and the names hold under concurrent requests.
 */
export function registerCorrelationRuleRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(listRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const page = await listRules(deps.db, auth.tenantId, {
      ...(query.enabled !== undefined ? { enabled: query.enabled } : {}),
      ...(query.stale !== undefined ? { stale: query.stale } : {}),
      limit: query.limit,
      ...(query.cursor ? { after: decodeRuleCursor(query.cursor) } : {}),
      now: deps.clock(),
    });
    const last = page.rows.at(-1);
    const now = deps.clock();
    return c.json(
      {
        items: page.rows.map((row) => toRuleView(row, now)),
        total: page.total,
        nextCursor: page.hasMore && last ? encodeRuleCursor(last) : null,
      },
      200,
    );
  });

  app.openapi(createRuleRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const row = await deps.db.transaction(async (tx) => {
      await lockTenantRules(tx, auth.tenantId);
      if ((await countRules(tx, auth.tenantId)) >= MAX_RULES_PER_TENANT) {
        throw new AppError(
          'conflict',
          `A tenant can have at most ${MAX_RULES_PER_TENANT} correlation rules; delete or combine some first`,
        );
      }
      const created = await insertRule(tx, {
        id: newId('crl'),
        tenantId: auth.tenantId,
        ...(fieldsOf(body) as RuleFields),
      });
      if (!created) throw new AppError('conflict', `A correlation rule named "${body.name}" already exists`);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'correlation_rule.created',
        targetType: 'correlation_rule',
        targetId: created.id,
        requestId: c.get('requestId'),
        details: { name: created.name, action: created.action, order: created.order, enabled: created.enabled },
      });
      return created;
    });
    return c.json(toRuleView(row, deps.clock()), 201);
  });

  app.openapi(getRuleRoute, async (c) => {
    const auth = c.var.auth;
    const row = await findRule(deps.db, auth.tenantId, c.req.valid('param').ruleId);
    if (!row) throw new AppError('not_found', noSuchRule);
    return c.json(toRuleView(row, deps.clock()), 200);
  });

  app.openapi(updateRuleRoute, async (c) => {
    const auth = c.var.auth;
    const { ruleId } = c.req.valid('param');
    const body = c.req.valid('json');
    const row = await deps.db.transaction(async (tx) => {
      await lockTenantRules(tx, auth.tenantId);
      const current = await findRule(tx, auth.tenantId, ruleId);
      if (!current) throw new AppError('not_found', noSuchRule);
      const changes = fieldsOf(body);
      // The window as it will stand: a new bound is judged against the one kept.
      const from = changes.activeFrom !== undefined ? changes.activeFrom : current.activeFrom;
      const until = changes.activeUntil !== undefined ? changes.activeUntil : current.activeUntil;
      if (from && until && until.getTime() <= from.getTime()) {
        const message = 'activeUntil must be after activeFrom';
        const path = body.activeUntil !== undefined ? 'activeUntil' : 'activeFrom';
        throw new AppError('validation_error', `${path}: ${message}`, [{ path, message }]);
      }
      if (changes.name !== undefined && changes.name !== current.name) {
        const holder = await findRuleByName(tx, auth.tenantId, changes.name);
        if (holder) throw new AppError('conflict', `A correlation rule named "${changes.name}" already exists`);
      }
      const updated = await updateRule(tx, auth.tenantId, ruleId, changes);
      if (!updated) throw new AppError('not_found', noSuchRule);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'correlation_rule.updated',
        targetType: 'correlation_rule',
        targetId: ruleId,
        requestId: c.get('requestId'),
        details: { fields: Object.keys(changes) },
      });
      return updated;
    });
    return c.json(toRuleView(row, deps.clock()), 200);
  });

  app.openapi(deleteRuleRoute, async (c) => {
    const auth = c.var.auth;
    const { ruleId } = c.req.valid('param');
    await deps.db.transaction(async (tx) => {
      const removed = await deleteRule(tx, auth.tenantId, ruleId);
      if (!removed) throw new AppError('not_found', noSuchRule);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'correlation_rule.deleted',
        targetType: 'correlation_rule',
        targetId: ruleId,
        requestId: c.get('requestId'),
        details: { name: removed.name },
      });
    });
    return c.body(null, 204);
  });
}
