import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { appendAudit } from '../../db/repositories/audit.js';
import { updateTenant } from '../../db/repositories/tenants.js';
import { remainingOf } from '../../db/repositories/usage.js';
import type { TenantRow } from '../../db/schema/tenants.js';
import { monthlyQuota, usagePeriod, type QuotaMetric } from '../../domain/plans.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { Tenant, TenantIdParam, TenantUsage, UpdateTenantBody } from '../schemas/tenants.js';

/** The correlation window when a tenant has not set one: the ingest path's default (src/ingest/batch-reads.ts). */
const DEFAULT_CORRELATION_WINDOW_MINUTES = 10;

export function toTenantView(row: TenantRow) {
  return {
    tenantId: row.id,
    name: row.name,
    slug: row.slug,
    status: row.status,
    plan: row.plan,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    settings: {
      cloudRoleArn: row.settings.cloudRoleArn ?? '',
      cloudExternalId: row.settings.cloudExternalId ?? '',
      cloudRegion: row.settings.cloudRegion ?? '',
      autoRemediation: row.settings.autoRemediation ?? false,
      requireWebhookSignature: row.settings.requireWebhookSignature ?? false,
      autoResolve: row.settings.autoResolve ?? false,
      approvalTimeoutMinutes: row.settings.approvalTimeoutMinutes ?? 60,
      allowHttpSkills: row.settings.allowHttpSkills ?? false,
      correlationWindowMinutes: row.settings.correlationWindowMinutes ?? DEFAULT_CORRELATION_WINDOW_MINUTES,
    },
  };
}

const getTenantRoute = createRoute({
  method: 'get',
  path: '/v1/tenants/{tenantId}',
  tags: ['tenants'],
  summary: "Get the caller's tenant",
  ...access('member'),
  request: { params: TenantIdParam },
  responses: { 200: jsonResponse(Tenant, 'The tenant'), ...errorResponses(401, 403, 404) },
});

const usageRoute = createRoute({
  method: 'get',
  path: '/v1/tenants/{tenantId}/usage',
  tags: ['tenants'],
  summary: "This month's quotas, use and what is left",
  description:
    "Integers for every plan: an enterprise tenant's quotas are the ones its operator set, else the documented defaults.",
  ...access('member'),
  request: { params: TenantIdParam },
  responses: { 200: jsonResponse(TenantUsage, 'The usage'), ...errorResponses(401, 403, 404) },
});

const updateTenantRoute = createRoute({
  method: 'patch',
  path: '/v1/tenants/{tenantId}',
  tags: ['tenants'],
  summary: 'Update the tenant name or settings (settings are merged)',
  ...access('admin'),
  request: {
    params: TenantIdParam,
    body: { required: true, content: { 'application/json': { schema: UpdateTenantBody } } },
  },
  responses: { 200: jsonResponse(Tenant, 'The updated tenant'), ...errorResponses(400, 401, 403, 404) },
});

export function registerTenantRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(getTenantRoute, (c) => {
    const auth = c.var.auth;
    if (c.req.valid('param').tenantId !== auth.tenantId) throw new AppError('not_found', 'Tenant not found');
    return c.json(toTenantView(auth.tenant), 200);
  });

  app.openapi(usageRoute, async (c) => {
    const auth = c.var.auth;
    if (c.req.valid('param').tenantId !== auth.tenantId) throw new AppError('not_found', 'Tenant not found');
    const period = usagePeriod(deps.clock());
    const use = async (metric: QuotaMetric) => {
      const limit = monthlyQuota(auth.tenant, metric);
      // `remaining` counts the credits bought once the quota is used (ADR 0289).
      const { used, remaining } = await remainingOf(deps.db, { tenantId: auth.tenantId, period, metric, limit });
      return { limit, used, remaining };
    };
    const [investigations, events, chatMessages] = await Promise.all([
      use('investigations'),
      use('events'),
      use('chat_messages'),
    ]);
    return c.json(
      { tenantId: auth.tenantId, plan: auth.tenant.plan, period, investigations, events, chatMessages },
      200,
    );
  });

  app.openapi(updateTenantRoute, async (c) => {
    const auth = c.var.auth;
    if (c.req.valid('param').tenantId !== auth.tenantId) throw new AppError('not_found', 'Tenant not found');
    const body = c.req.valid('json');
    const settings = body.settings
      ? Object.fromEntries(Object.entries(body.settings).filter(([, v]) => v !== undefined))
      : undefined;
    const updated = await deps.db.transaction(async (tx) => {
      const row = await updateTenant(tx, auth.tenantId, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(settings ? { settings } : {}),
      });
      if (!row) throw new AppError('not_found', 'Tenant not found');
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'tenant.updated',
        targetType: 'tenant',
        targetId: auth.tenantId,
        requestId: c.get('requestId'),
        // Which fields changed, never their values (settings may hold external identifiers).
        details: { name: body.name !== undefined, settings: Object.keys(settings ?? {}) },
      });
      return row;
    });
    return c.json(toTenantView(updated), 200);
  });
}
