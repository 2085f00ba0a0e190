import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { and, count, eq, inArray, or, sql } from 'drizzle-orm';
import type { TypedResponse } from 'hono';
import { appendAudit } from '../../db/repositories/audit.js';
import { BlastRadiusCache } from '../../db/repositories/blast-radius-cache.js';
import {
  findService,
  listEdges,
  listServices,
  toEdgeView,
  toServiceView,
  type BlastRadius,
} from '../../db/repositories/topology.js';
import { serviceEdges, services } from '../../db/schema/topology.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  BlastRadiusSchema,
  CreateEdgeBody,
  CreateServiceBody,
  EdgeIdParam,
  ListEdgesQuery,
  ListServicesQuery,
  ServiceEdge,
  ServiceEdgeList,
  ServiceIdParam,
  ServiceNode,
  ServiceNodeList,
  UpdateServiceBody,
} from '../schemas/graph.js';

const tags = ['topology'];
const noSuchService = 'No service has that identifier';

const createNodeRoute = createRoute({
  method: 'post',
  path: '/v1/graph/nodes',
  tags,
  summary: 'Add a service node (its name is unique in the tenant)',
  ...access('member'),
  request: { body: { required: true, content: { 'application/json': { schema: CreateServiceBody } } } },
  responses: { 201: jsonResponse(ServiceNode, 'The new service node'), ...errorResponses(400, 401, 403, 409) },
});

function registerCreateNode(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(createNodeRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const row = await deps.db.transaction(async (tx) => {
      // The unique index decides a race between two creations of one name: no check-then-insert.
      const [created] = await tx
        .insert(services)
        .values({
          id: newId('svc'),
          tenantId: auth.tenantId,
          name: body.name,
          type: body.type,
          team: body.team ?? null,
          criticality: body.criticality,
          repositories: body.repositories,
        })
        .onConflictDoNothing({ target: [services.tenantId, services.name] })
        .returning();
      if (!created) throw new AppError('conflict', `A service named "${body.name}" already exists`);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'service.created',
        targetType: 'service',
        targetId: created.id,
        requestId: c.get('requestId'),
        details: {
          name: created.name,
          type: created.type,
          team: created.team,
          criticality: created.criticality,
          // Named only when given, so the audit of a plain node reads as it always has.
          ...(created.repositories.length > 0 ? { repositories: created.repositories } : {}),
        },
      });
      return created;
    });
    return c.json(toServiceView(row), 201);
  });
}

const listNodesRoute = createRoute({
  method: 'get',
  path: '/v1/graph/nodes',
  tags,
  summary: 'List service nodes, newest first',
  ...access('member'),
  request: { query: ListServicesQuery },
  responses: { 200: jsonResponse(ServiceNodeList, 'A page of service nodes'), ...errorResponses(400, 401, 403) },
});

function registerListNodes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(listNodesRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const page = await listServices(deps.db, auth.tenantId, {
      ...(query.type ? { type: query.type } : {}),
      ...(query.team ? { team: query.team } : {}),
      limit: query.limit,
      ...(after ? { after } : {}),
    });
    return c.json(
      {
        items: page.rows.map(toServiceView),
        total: page.total,
        nextCursor: nextCursor(page.rows, page.hasMore, 'desc'),
      },
      200,
    );
  });
}

const getNodeRoute = createRoute({
  method: 'get',
  path: '/v1/graph/nodes/{serviceId}',
  tags,
  summary: 'Get one service node',
  ...access('member'),
  request: { params: ServiceIdParam },
  responses: { 200: jsonResponse(ServiceNode, 'The service node'), ...errorResponses(400, 401, 403, 404) },
});

function registerGetNode(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(getNodeRoute, async (c) => {
    const auth = c.var.auth;
    const row = await findService(deps.db, auth.tenantId, c.req.valid('param').serviceId);
    if (!row) throw new AppError('not_found', noSuchService);
    return c.json(toServiceView(row), 200);
  });
}

const updateNodeRoute = createRoute({
  method: 'patch',
  path: '/v1/graph/nodes/{serviceId}',
  tags,
  summary: "Change a service node's team, criticality, type or repositories (its name is fixed)",
  ...access('member'),
  request: {
    params: ServiceIdParam,
    body: { required: true, content: { 'application/json': { schema: UpdateServiceBody } } },
  },
  responses: { 200: jsonResponse(ServiceNode, 'The updated service node'), ...errorResponses(400, 401, 403, 404) },
});

function registerUpdateNode(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(updateNodeRoute, async (c) => {
    const auth = c.var.auth;
    const { serviceId } = c.req.valid('param');
    const body = c.req.valid('json');
    const changes = {
      ...(body.team !== undefined ? { team: body.team } : {}),
      ...(body.criticality !== undefined ? { criticality: body.criticality } : {}),
      ...(body.type !== undefined ? { type: body.type } : {}),
      ...(body.repositories !== undefined ? { repositories: body.repositories } : {}),
    };
    const row = await deps.db.transaction(async (tx) => {
      const [updated] = await tx
        .update(services)
        .set({ ...changes, updatedAt: sql`now()` })
        .where(and(eq(services.tenantId, auth.tenantId), eq(services.id, serviceId)))
        .returning();
      if (!updated) throw new AppError('not_found', noSuchService);
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'service.updated',
        targetType: 'service',
        targetId: serviceId,
        requestId: c.get('requestId'),
        details: changes,
      });
      return updated;
    });
    return c.json(toServiceView(row), 200);
  });
}

const deleteNodeRoute = createRoute({
  method: 'delete',
  path: '/v1/graph/nodes/{serviceId}',
  tags,
  summary: 'Remove a service node and every edge to or from it',
  ...access('member'),
  request: { params: ServiceIdParam },
  responses: { 204: { description: 'Removed' }, ...errorResponses(400, 401, 403, 404) },
});

function registerDeleteNode(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(deleteNodeRoute, async (c) => {
    const auth = c.var.auth;
    const { serviceId } = c.req.valid('param');
    await deps.db.transaction(async (tx) => {
      // Locking the row first holds off new edges to it (their foreign key check needs a share
      // lock on it), so the count audited is the count the cascade removes.
      const [row] = await tx
        .select({ name: services.name })
        .from(services)
        .where(and(eq(services.tenantId, auth.tenantId), eq(services.id, serviceId)))
        .for('update');
      if (!row) throw new AppError('not_found', noSuchService);
      const [edges] = await tx
        .select({ n: count() })
        .from(serviceEdges)
        .where(
          and(
            eq(serviceEdges.tenantId, auth.tenantId),
            or(eq(serviceEdges.sourceServiceId, serviceId), eq(serviceEdges.targetServiceId, serviceId)),
          ),
        );
      await tx.delete(services).where(eq(services.id, serviceId));
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'service.deleted',
        targetType: 'service',
        targetId: serviceId,
        requestId: c.get('requestId'),
        details: { name: row.name, edgesRemoved: edges?.n ?? 0 },
      });
    });
    return c.body(null, 204);
  });
}

const createEdgeRoute = createRoute({
  method: 'post',
  path: '/v1/graph/edges',
  tags,
  summary: 'Record that the source service depends on the target service',
  ...access('member'),
  request: { body: { required: true, content: { 'application/json': { schema: CreateEdgeBody } } } },
  responses: { 201: jsonResponse(ServiceEdge, 'The new edge'), ...errorResponses(400, 401, 403, 404, 409) },
});

function registerCreateEdge(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(createEdgeRoute, async (c) => {
    const auth = c.var.auth;
    const { sourceServiceId, targetServiceId } = c.req.valid('json');
    const row = await deps.db.transaction(async (tx) => {
      // A key-share lock on both ends keeps them from being deleted before the edge commits.
      const found = await tx
        .select({ id: services.id })
        .from(services)
        .where(and(eq(services.tenantId, auth.tenantId), inArray(services.id, [sourceServiceId, targetServiceId])))
        .for('key share');
      const ids = new Set(found.map((s) => s.id));
      const missing = (['sourceServiceId', 'targetServiceId'] as const).filter(
        (field) => !ids.has(field === 'sourceServiceId' ? sourceServiceId : targetServiceId),
      );
      if (missing.length > 0) {
        throw new AppError(
          'not_found',
          `No service has the identifier given in ${missing.join(' and ')}`,
          missing.map((path) => ({ path, message: noSuchService })),
        );
      }
      const [created] = await tx
        .insert(serviceEdges)
        .values({ id: newId('edg'), tenantId: auth.tenantId, sourceServiceId, targetServiceId })
        .onConflictDoNothing({
          target: [serviceEdges.tenantId, serviceEdges.sourceServiceId, serviceEdges.targetServiceId],
        })
        .returning();
      if (!created) throw new AppError('conflict', 'This edge already exists');
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'service_edge.created',
        targetType: 'service_edge',
        targetId: created.id,
        requestId: c.get('requestId'),
        details: { sourceServiceId, targetServiceId },
      });
      return created;
    });
    return c.json(toEdgeView(row), 201);
  });
}

const listEdgesRoute = createRoute({
  method: 'get',
  path: '/v1/graph/edges',
  tags,
  summary: 'List dependency edges, newest first',
  ...access('member'),
  request: { query: ListEdgesQuery },
  responses: { 200: jsonResponse(ServiceEdgeList, 'A page of edges'), ...errorResponses(400, 401, 403) },
});

function registerListEdges(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(listEdgesRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const page = await listEdges(deps.db, auth.tenantId, {
      ...(query.serviceId ? { serviceId: query.serviceId } : {}),
      limit: query.limit,
      ...(after ? { after } : {}),
    });
    return c.json(
      {
        items: page.rows.map(toEdgeView),
        total: page.total,
        nextCursor: nextCursor(page.rows, page.hasMore, 'desc'),
      },
      200,
    );
  });
}

const deleteEdgeRoute = createRoute({
  method: 'delete',
  path: '/v1/graph/edges/{edgeId}',
  tags,
  summary: 'Remove a dependency edge',
  ...access('member'),
  request: { params: EdgeIdParam },
  responses: { 204: { description: 'Removed' }, ...errorResponses(400, 401, 403, 404) },
});

function registerDeleteEdge(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(deleteEdgeRoute, async (c) => {
    const auth = c.var.auth;
    const { edgeId } = c.req.valid('param');
    await deps.db.transaction(async (tx) => {
      const [removed] = await tx
        .delete(serviceEdges)
        .where(and(eq(serviceEdges.tenantId, auth.tenantId), eq(serviceEdges.id, edgeId)))
        .returning();
      if (!removed) throw new AppError('not_found', 'No edge has that identifier');
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'service_edge.deleted',
        targetType: 'service_edge',
        targetId: edgeId,
        requestId: c.get('requestId'),
        details: { sourceServiceId: removed.sourceServiceId, targetServiceId: removed.targetServiceId },
      });
    });
    return c.body(null, 204);
  });
}

const blastRadiusRoute = createRoute({
  method: 'get',
  path: '/v1/graph/blast-radius/{serviceId}',
  tags,
  summary: 'Every service a failure of this one would affect, with shortest hops and impact',
  ...access('member'),
  request: { params: ServiceIdParam },
  responses: { 200: jsonResponse(BlastRadiusSchema, 'The blast radius'), ...errorResponses(400, 401, 403, 404) },
});

function registerBlastRadius(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const blastRadiusCache = new BlastRadiusCache(); // one per app
  app.openapi(blastRadiusRoute, async (c) => {
    const auth = c.var.auth;
    const body = await blastRadiusCache.get(deps.db, auth.tenantId, c.req.valid('param').serviceId);
    if (body === undefined) throw new AppError('not_found', noSuchService);
    // The cached JSON text as it is (it was serialised from a BlastRadius, the documented
    // schema); c.json() would serialise hundreds of kilobytes again on every call.
    return c.body(body, 200, { 'content-type': 'application/json' }) as unknown as TypedResponse<
      BlastRadius,
      200,
      'json'
    >;
  });
}

/** The topology graph: service nodes, dependency edges and blast radius. Every role may read and edit it. */
export function registerGraphRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  registerCreateNode(app, deps);
  registerListNodes(app, deps);
  registerGetNode(app, deps);
  registerUpdateNode(app, deps);
  registerDeleteNode(app, deps);
  registerCreateEdge(app, deps);
  registerListEdges(app, deps);
  registerDeleteEdge(app, deps);
  registerBlastRadius(app, deps);
}
