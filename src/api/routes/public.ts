import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { catalogEntries, integrationCategories } from '../../domain/catalog.js';
import { planIds, plans } from '../../domain/plans.js';
import type { AppDeps, AppEnv } from '../context.js';
import { errorResponses } from '../schemas/common.js';

const PlanSchema = z
  .object({
    planId: z.enum(planIds),
    name: z.string(),
    priceMonthlyUsd: z.number().nullable(),
    features: z.object({
      investigationsPerMonth: z.union([z.number().int(), z.literal('custom')]),
      eventsPerMonth: z.union([z.number().int(), z.literal('custom')]),
      apiRateLimitPerMinute: z.number().int(),
      customSkills: z.boolean(),
      relayAccess: z.boolean(),
    }),
  })
  .openapi('Plan');

const CatalogEntrySchema = z
  .object({
    provider: z.string(),
    displayName: z.string(),
    category: z.enum(integrationCategories),
    description: z.string(),
    authType: z.enum(['oauth2', 'api_key', 'webhook_only']),
    scopes: z.array(z.string()),
    requiredFields: z.array(z.string()),
    connectUrl: z.string(),
  })
  .openapi('IntegrationCatalogEntry');

export function registerPublicRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/billing/plans',
      tags: ['public'],
      summary: 'Subscription plans (public)',
      responses: {
        200: {
          description: 'Plans',
          content: { 'application/json': { schema: z.object({ plans: z.array(PlanSchema) }) } },
        },
        ...errorResponses(429),
      },
    }),
    (c) => c.json({ plans: [...plans] }, 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/integrations/catalog',
      tags: ['public'],
      summary: 'Connectable integrations (public)',
      request: { query: z.object({ category: z.enum(integrationCategories).optional() }) },
      responses: {
        200: {
          description: 'Catalog',
          content: {
            'application/json': { schema: z.object({ items: z.array(CatalogEntrySchema), total: z.number().int() }) },
          },
        },
        ...errorResponses(400, 429),
      },
    }),
    (c) => {
      const items = catalogEntries(deps.config.publicBaseUrl, c.req.valid('query').category);
      return c.json({ items, total: items.length }, 200);
    },
  );
}
