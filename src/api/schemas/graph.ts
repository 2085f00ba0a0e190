import { z } from '@hono/zod-openapi';
import { serviceTypes } from '../../db/schema/topology.js';
import { limitParam, oneLine } from './common.js';

const ServiceTypeSchema = z.enum(serviceTypes).openapi({ example: 'api' });
const Team = oneLine(100, 'team must not be empty').openapi({ example: 'payments-sre' });
const Criticality = z.number().int().min(1).max(10).openapi({ description: '1 (lowest) to 10 (highest)', example: 5 });
const ServiceIdField = (description: string) => z.string().min(1).max(64).openapi({ description, example: 'svc_01j…' });
const Cursor = z.string().min(1).max(512).optional();

/** Most repositories a node names, and path globs per repository (ADR 0266). */
export const MAX_NODE_REPOSITORIES = 20;
export const MAX_REPOSITORY_PATHS = 20;

const RepositoryEntry = z
  .object({
    repository: oneLine(200, 'repository is required')
      .regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, 'repository must be owner/name, as the tool names it')
      .openapi({ example: 'acme/platform-config' }),
    paths: z
      .array(
        oneLine(300, 'a path glob must not be empty').refine(
          (glob) => !glob.startsWith('/'),
          'a path glob is relative to the repository root (no leading /)',
        ),
      )
      .min(1, 'paths must name at least one glob; leave it out for the whole repository')
      .max(MAX_REPOSITORY_PATHS, `at most ${MAX_REPOSITORY_PATHS} path globs per repository`)
      .optional()
      .openapi({
        description: "Globs (`*`, `**`, `?`) of the paths that are this service's; absent: the whole repository",
        example: ['apps/checkout/**', 'charts/checkout/**'],
      }),
  })
  .strict()
  .openapi('ServiceRepository');

const Repositories = z
  .array(RepositoryEntry)
  .max(MAX_NODE_REPOSITORIES, `at most ${MAX_NODE_REPOSITORIES} repositories per service`)
  .refine(
    (entries) => new Set(entries.map((e) => e.repository.toLowerCase())).size === entries.length,
    'each repository may be listed once',
  )
  .openapi({
    description:
      'Repositories whose changes affect this service: its own, or shared ones (GitOps, Helm values, Terraform) limited to its paths',
  });

export const CreateServiceBody = z
  .object({
    name: oneLine(200, 'name is required').openapi({ example: 'checkout-api' }),
    type: ServiceTypeSchema,
    team: Team.nullable().optional(),
    criticality: Criticality.default(5),
    repositories: Repositories.default([]),
  })
  .strict()
  .openapi('CreateServiceNode');

export const UpdateServiceBody = z
  .object({
    team: Team.nullable().optional(),
    criticality: Criticality.optional(),
    type: ServiceTypeSchema.optional(),
    repositories: Repositories.optional().openapi({ description: 'Replaces the list; [] clears it' }),
  })
  .strict()
  .refine((body) => Object.values(body).some((v) => v !== undefined), {
    message: 'Give at least one of team, criticality, type, repositories',
  })
  .openapi('UpdateServiceNode', { minProperties: 1 });

export const ServiceNode = z
  .object({
    serviceId: z.string().openapi({ example: 'svc_01j…' }),
    name: z.string(),
    type: ServiceTypeSchema,
    team: z.string().nullable(),
    criticality: z.number().int(),
    repositories: z.array(
      z.object({ repository: z.string(), paths: z.array(z.string()).optional() }).openapi('ServiceRepositoryView'),
    ),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('ServiceNode');

export const ListServicesQuery = z.object({
  type: ServiceTypeSchema.optional(),
  team: z.string().min(1).max(100).optional(),
  limit: limitParam(50, 200),
  cursor: Cursor,
});
export const ServiceNodeList = z
  .object({ items: z.array(ServiceNode), total: z.number().int(), nextCursor: z.string().nullable() })
  .openapi('ServiceNodeList');

export const ServiceIdParam = z.object({
  serviceId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'serviceId', in: 'path' } }),
});

export const CreateEdgeBody = z
  .object({
    sourceServiceId: ServiceIdField('The service that depends on the target'),
    targetServiceId: ServiceIdField('The service it depends on'),
  })
  .strict()
  .refine((body) => body.sourceServiceId !== body.targetServiceId, {
    message: 'A service cannot depend on itself',
    path: ['targetServiceId'],
  })
  .openapi('CreateServiceEdge');

export const ServiceEdge = z
  .object({ edgeId: z.string(), sourceServiceId: z.string(), targetServiceId: z.string(), createdAt: z.string() })
  .openapi('ServiceEdge');

export const ListEdgesQuery = z.object({
  serviceId: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .openapi({ description: 'Only edges with this service at either end' }),
  limit: limitParam(50, 200),
  cursor: Cursor,
});
export const ServiceEdgeList = z
  .object({ items: z.array(ServiceEdge), total: z.number().int(), nextCursor: z.string().nullable() })
  .openapi('ServiceEdgeList');

export const EdgeIdParam = z.object({
  edgeId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'edgeId', in: 'path' } }),
});

export const BlastRadiusSchema = z
  .object({
    serviceId: z.string(),
    affectedServices: z.array(
      z.object({
        serviceId: z.string(),
        name: z.string(),
        hops: z.number().int().openapi({ description: 'Shortest number of dependency edges to the failed service' }),
        impact: z.enum(['high', 'medium', 'low']),
      }),
    ),
    totalAffected: z.number().int(),
  })
  .openapi('BlastRadius');
