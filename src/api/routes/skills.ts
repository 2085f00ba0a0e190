import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { and, eq, sql } from 'drizzle-orm';
import type { ZodError } from 'zod';
import { appendAudit } from '../../db/repositories/audit.js';
import {
  findSkill,
  listSkills,
  sortedHeaderNames,
  toBuiltinView,
  toSkillView,
  type SkillView,
} from '../../db/repositories/skills.js';
import { skills, type SkillRow } from '../../db/schema/skills.js';
import type { TenantRow } from '../../db/schema/tenants.js';
import { getPlan } from '../../domain/plans.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import { builtinAction, findBuiltinSkill, isBuiltinName } from '../../skills/builtins.js';
import { checkInput, describeProblems } from '../../skills/json-schema.js';
import type { SkillRuntime, StoredHttpConfig } from '../../skills/invoke.js';
import { outboundUrlRefusal } from '../../skills/ssrf.js';
import type { AppDeps, AppEnv, AuthContext } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { urlForViewer } from '../url-view.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  BuiltinSkillConfig,
  CreatedSkill,
  CreateSkillBody,
  HttpSkillConfig,
  IntegrationSkillConfig,
  ListSkillsQuery,
  Skill,
  SkillList,
  SkillPathParams,
  SkillTestResult,
  TestSkillBody,
  UpdatedSkill,
  UpdateSkillBody,
} from '../schemas/skills.js';
import { TenantIdParam } from '../schemas/tenants.js';

const tags = ['skills'];
const base = '/api/v1/tenants/{tenantId}/skills';
const noSuchSkill = 'No skill has that identifier';

/** The skills module lives under the tenant's path; another tenant's id is not found. */
function requireTenant(auth: AuthContext, tenantId: string): AuthContext {
  if (tenantId !== auth.tenantId) throw new AppError('not_found', 'Tenant not found');
  return auth;
}

function requireCustomSkills(tenant: TenantRow): void {
  const plan = getPlan(tenant.plan);
  if (!plan.features.customSkills) {
    throw new AppError(
      'forbidden',
      `The ${plan.name} plan does not include custom skills; upgrade to Pro, Business or Enterprise`,
    );
  }
}

function refuseBuiltin(skillId: string, verb: string): void {
  if (findBuiltinSkill(skillId)) {
    throw new AppError('validation_error', `Builtin skills ship with the service and cannot be ${verb}`);
  }
}

function invalid(details: Array<{ path: string; message: string }>): AppError {
  return new AppError('validation_error', details.map((d) => `${d.path}: ${d.message}`).join('; '), details);
}

function configIssues(error: ZodError): Array<{ path: string; message: string }> {
  return error.issues.map((i) => ({ path: ['config', ...i.path.map(String)].join('.'), message: i.message }));
}

/**
 * The config to store for a skill of `type`: validated for the type and the tenant, header
 * values sealed with the tenant, skill and header name bound in.
 */
function storedConfig(
  type: SkillRow['type'],
  raw: Record<string, unknown>,
  context: { tenant: TenantRow; skillId: string; runtime: SkillRuntime },
): Record<string, unknown> {
  if (type === 'integration' || type === 'builtin') {
    const parsed = (type === 'builtin' ? BuiltinSkillConfig : IntegrationSkillConfig).safeParse(raw);
    if (!parsed.success) throw invalid(configIssues(parsed.error));
    return parsed.data;
  }
  const parsed = HttpSkillConfig.safeParse(raw);
  if (!parsed.success) throw invalid(configIssues(parsed.error));
  // An address written into the URL is judged now; a host name after each resolution, when called.
  const refusal = outboundUrlRefusal(new URL(parsed.data.url), {
    allowHttp: context.tenant.settings.allowHttpSkills === true,
    allowlist: context.runtime.allowlist,
  });
  if (refusal) throw invalid([{ path: 'config.url', message: refusal }]);
  const headers = Object.entries(parsed.data.headers ?? {});
  const config: StoredHttpConfig = { url: parsed.data.url, method: parsed.data.method };
  if (headers.length > 0) {
    config.headers = Object.fromEntries(
      headers.map(([name, value]) => [
        name,
        context.runtime.cipher.encrypt(value, { tenantId: context.tenant.id, skillId: context.skillId, header: name }),
      ]),
    );
  }
  return { ...config };
}

/** A builtin skill's input is its action's: it has no schema of its own to store. */
function refuseOwnInputSchema(type: SkillRow['type'], inputSchema: unknown): void {
  if (type === 'builtin' && inputSchema !== undefined && inputSchema !== null) {
    throw invalid([{ path: 'inputSchema', message: "a builtin skill takes its action's input schema; send none" }]);
  }
}

/** The input schema a tenant skill's input is checked against: a builtin skill's is its action's. */
function inputSchemaOf(row: SkillRow): Record<string, unknown> | null {
  if (row.type === 'builtin') return builtinAction(String(row.config.action))?.inputSchema ?? null;
  return row.inputSchema ?? null;
}

/** A skill as `auth` may see it: an http skill's URL query masked for non-admins; a builtin skill with its action's input schema. */
function viewFor(view: SkillView, auth: AuthContext): SkillView {
  if (view.type === 'builtin' && view.inputSchema === null && 'action' in view.config) {
    return { ...view, inputSchema: builtinAction(String(view.config.action))?.inputSchema ?? null };
  }
  const config = view.config;
  if (!('url' in config) || typeof config.url !== 'string') return view;
  return { ...view, config: { ...config, url: urlForViewer(config.url, auth) } };
}

function headerNames(config: Record<string, unknown>): string[] {
  return sortedHeaderNames((config as { headers?: Record<string, string> }).headers);
}

const createSkillRoute = createRoute({
  method: 'post',
  path: base,
  tags,
  summary:
    'Create a custom skill (http, integration, or builtin running one of the builtin actions); header values are stored encrypted and never returned',
  ...access('admin'),
  request: {
    params: TenantIdParam,
    body: { required: true, content: { 'application/json': { schema: CreateSkillBody } } },
  },
  responses: { 201: jsonResponse(CreatedSkill, 'The new skill'), ...errorResponses(400, 401, 403, 404, 409) },
});

function registerCreateSkill(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(createSkillRoute, async (c) => {
    const auth = requireTenant(c.var.auth, c.req.valid('param').tenantId);
    requireCustomSkills(auth.tenant);
    const body = c.req.valid('json');
    if (isBuiltinName(body.name)) {
      throw new AppError('skill_name_conflict', `"${body.name}" is the name of a builtin skill`);
    }
    const type = body.type;
    const skillId = newId('skl');
    const config = storedConfig(type, body.config, { tenant: auth.tenant, skillId, runtime: deps.skills });
    refuseOwnInputSchema(type, body.inputSchema);
    const row = await deps.db.transaction(async (tx) => {
      // The unique index decides a race between two creations of one name: no check-then-insert.
      const [created] = await tx
        .insert(skills)
        .values({
          id: skillId,
          tenantId: auth.tenantId,
          name: body.name,
          description: body.description,
          type,
          config,
          inputSchema: body.inputSchema ?? null,
          enabled: body.enabled ?? true,
        })
        .onConflictDoNothing({ target: [skills.tenantId, skills.name] })
        .returning();
      if (!created) throw new AppError('skill_name_conflict', `A skill named "${body.name}" already exists`);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'skill.created',
        targetType: 'skill',
        targetId: skillId,
        requestId: c.get('requestId'),
        // Names only: header values and the URL (which may carry a token) stay out of the log.
        details: { name: body.name, type, enabled: created.enabled, headerNames: headerNames(config) },
      });
      return created;
    });
    return c.json(
      {
        skillId: row.id,
        tenantId: row.tenantId,
        name: row.name,
        description: row.description,
        type: row.type,
        enabled: row.enabled,
        createdAt: row.createdAt.toISOString(),
      },
      201,
    );
  });
}

const listSkillsRoute = createRoute({
  method: 'get',
  path: base,
  tags,
  summary: "List skills: the builtin skills, then the tenant's skills oldest first",
  ...access('member'),
  request: { params: TenantIdParam, query: ListSkillsQuery },
  responses: { 200: jsonResponse(SkillList, 'A page of skills'), ...errorResponses(400, 401, 403, 404) },
});

function registerListSkills(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(listSkillsRoute, async (c) => {
    const auth = requireTenant(c.var.auth, c.req.valid('param').tenantId);
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'asc') : undefined;
    const page = await listSkills(deps.db, auth.tenantId, query.limit, after);
    const last = page.items.at(-1);
    return c.json(
      {
        items: page.items.map((item) => viewFor(item.view, auth)),
        nextCursor:
          page.hasMore && last ? encodeCursor({ createdAt: last.createdAt, id: last.id, order: 'asc' }) : null,
      },
      200,
    );
  });
}

const getSkillRoute = createRoute({
  method: 'get',
  path: `${base}/{skillId}`,
  tags,
  summary: 'Get a skill (header names only, never their values)',
  ...access('member'),
  request: { params: SkillPathParams },
  responses: { 200: jsonResponse(Skill, 'The skill'), ...errorResponses(401, 403, 404) },
});

function registerGetSkill(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(getSkillRoute, async (c) => {
    const { tenantId, skillId } = c.req.valid('param');
    const auth = requireTenant(c.var.auth, tenantId);
    const builtin = findBuiltinSkill(skillId);
    if (builtin) return c.json(toBuiltinView(builtin, auth.tenantId), 200);
    const row = await findSkill(deps.db, auth.tenantId, skillId);
    if (!row) throw new AppError('skill_not_found', noSuchSkill);
    return c.json(viewFor(toSkillView(row), auth), 200);
  });
}

const updateSkillRoute = createRoute({
  method: 'patch',
  path: `${base}/{skillId}`,
  tags,
  summary: 'Update a skill: only the sent fields change; config and inputSchema are replaced whole',
  ...access('admin'),
  request: {
    params: SkillPathParams,
    body: { required: true, content: { 'application/json': { schema: UpdateSkillBody } } },
  },
  responses: { 200: jsonResponse(UpdatedSkill, 'The updated skill'), ...errorResponses(400, 401, 403, 404) },
});

function registerUpdateSkill(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(updateSkillRoute, async (c) => {
    const { tenantId, skillId } = c.req.valid('param');
    const auth = requireTenant(c.var.auth, tenantId);
    requireCustomSkills(auth.tenant);
    refuseBuiltin(skillId, 'changed');
    const body = c.req.valid('json');
    const row = await deps.db.transaction(async (tx) => {
      const [current] = await tx
        .select()
        .from(skills)
        .where(and(eq(skills.tenantId, auth.tenantId), eq(skills.id, skillId)))
        .for('update');
      if (!current) throw new AppError('skill_not_found', noSuchSkill);
      const changes: Partial<typeof skills.$inferInsert> = {};
      if (body.description !== undefined) changes.description = body.description;
      if (body.enabled !== undefined) changes.enabled = body.enabled;
      refuseOwnInputSchema(current.type, body.inputSchema);
      if (body.inputSchema !== undefined) changes.inputSchema = body.inputSchema;
      if (body.config !== undefined) {
        changes.config = storedConfig(current.type, body.config, {
          tenant: auth.tenant,
          skillId,
          runtime: deps.skills,
        });
      }
      const fields = Object.keys(changes);
      if (fields.length === 0) return current;
      const [updated] = await tx
        .update(skills)
        .set({ ...changes, updatedAt: sql`now()` })
        .where(eq(skills.id, skillId))
        .returning();
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'skill.updated',
        targetType: 'skill',
        targetId: skillId,
        requestId: c.get('requestId'),
        // Which fields changed, and the header names of a new config: never values.
        details: {
          name: current.name,
          fields,
          ...(changes.enabled !== undefined ? { enabled: changes.enabled } : {}),
          ...(changes.config ? { headerNames: headerNames(changes.config) } : {}),
        },
      });
      return updated!;
    });
    return c.json(
      { skillId: row.id, name: row.name, enabled: row.enabled, updatedAt: row.updatedAt.toISOString() },
      200,
    );
  });
}

const deleteSkillRoute = createRoute({
  method: 'delete',
  path: `${base}/{skillId}`,
  tags,
  summary: 'Delete a skill (its invocation records are kept)',
  ...access('admin'),
  request: { params: SkillPathParams },
  responses: { 204: { description: 'Deleted' }, ...errorResponses(400, 401, 403, 404) },
});

function registerDeleteSkill(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(deleteSkillRoute, async (c) => {
    const { tenantId, skillId } = c.req.valid('param');
    const auth = requireTenant(c.var.auth, tenantId);
    refuseBuiltin(skillId, 'deleted');
    await deps.db.transaction(async (tx) => {
      const [deleted] = await tx
        .delete(skills)
        .where(and(eq(skills.tenantId, auth.tenantId), eq(skills.id, skillId)))
        .returning({ name: skills.name });
      if (!deleted) throw new AppError('skill_not_found', noSuchSkill);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'skill.deleted',
        targetType: 'skill',
        targetId: skillId,
        requestId: c.get('requestId'),
        details: { name: deleted.name },
      });
    });
    return c.body(null, 204);
  });
}

const testSkillRoute = createRoute({
  method: 'post',
  path: `${base}/{skillId}/test`,
  tags,
  summary: 'Run a skill once with the given input, through Temporal, and return its output or its error',
  description:
    'The skill runs through the same activity agents use. A skill that fails (refused address, timeout, oversized reply, error status, disabled) is still a 200 with `ok: false` and the error; input that does not match the skill’s input schema is a 400.',
  ...access('admin'),
  request: {
    params: SkillPathParams,
    body: { required: false, content: { 'application/json': { schema: TestSkillBody } } },
  },
  responses: {
    200: jsonResponse(SkillTestResult, 'The outcome of the call'),
    ...errorResponses(400, 401, 403, 404, 503),
  },
});

function registerTestSkill(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(testSkillRoute, async (c) => {
    const { tenantId, skillId } = c.req.valid('param');
    const auth = requireTenant(c.var.auth, tenantId);
    const input = c.req.valid('json')?.input ?? {};
    const builtin = findBuiltinSkill(skillId);
    let inputSchema: Record<string, unknown> | null;
    if (builtin) {
      inputSchema = builtin.inputSchema;
    } else {
      requireCustomSkills(auth.tenant);
      const row = await findSkill(deps.db, auth.tenantId, skillId);
      if (!row) throw new AppError('skill_not_found', noSuchSkill);
      inputSchema = inputSchemaOf(row);
    }
    const problems = checkInput(inputSchema, input);
    if (problems.length > 0) {
      throw new AppError(
        'validation_error',
        `input does not match the skill's input schema: ${describeProblems(problems)}`,
        problems.map((p) => ({ path: `input${p.path === '/' ? '' : p.path}`, message: p.message })),
      );
    }
    const outcome = await deps.workflows.testSkill({
      invocationId: newId('ski'),
      tenantId: auth.tenantId,
      skillId,
      input,
    });
    const { invocationId, durationMs } = outcome;
    // A test reaches out to the skill's endpoint with the tenant's credentials: kept on record.
    await appendAudit(deps.db, {
      tenantId: auth.tenantId,
      actorType: 'user',
      actorId: auth.userId,
      action: 'skill.tested',
      targetType: 'skill',
      targetId: skillId,
      requestId: c.get('requestId'),
      details: { invocationId, ok: outcome.ok, durationMs, ...(outcome.ok ? {} : { errorCode: outcome.error.code }) },
    });
    return c.json(
      outcome.ok
        ? { skillId, invocationId, ok: true, output: outcome.output, durationMs }
        : { skillId, invocationId, ok: false, error: outcome.error, durationMs },
      200,
    );
  });
}

export function registerSkillRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  // `config` is checked by type in the handlers; the two shapes are documented as components.
  app.openAPIRegistry.register('HttpSkillConfig', HttpSkillConfig);
  app.openAPIRegistry.register('IntegrationSkillConfig', IntegrationSkillConfig);
  app.openAPIRegistry.register('BuiltinSkillConfig', BuiltinSkillConfig);
  registerCreateSkill(app, deps);
  registerListSkills(app, deps);
  registerGetSkill(app, deps);
  registerUpdateSkill(app, deps);
  registerDeleteSkill(app, deps);
  registerTestSkill(app, deps);
}
