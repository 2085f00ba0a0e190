import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { findIncident, listIncidents, toIncidentView } from '../../db/repositories/incidents.js';
import { AppError } from '../../errors.js';
import { requesterOf, type AppDeps, type AppEnv } from '../context.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  CreateIncidentBody,
  CreatedIncident,
  Incident,
  IncidentIdParam,
  IncidentList,
  ListIncidentsQuery,
  UpdateIncidentBody,
} from '../schemas/incidents.js';

const openIncident = createRoute({
  method: 'post',
  path: '/v1/incidents/chat',
  tags: ['incidents'],
  summary: 'Open a manual incident',
  ...access('member'),
  request: { body: { required: true, content: { 'application/json': { schema: CreateIncidentBody } } } },
  responses: { 201: jsonResponse(CreatedIncident, 'Incident opened'), ...errorResponses(400, 401, 403, 429) },
});

const listIncidentsRoute = createRoute({
  method: 'get',
  path: '/v1/incidents',
  tags: ['incidents'],
  summary: 'List incidents (newest first by default)',
  ...access('member'),
  request: { query: ListIncidentsQuery },
  responses: { 200: jsonResponse(IncidentList, 'A page of incidents'), ...errorResponses(400, 401, 403) },
});

const getIncident = createRoute({
  method: 'get',
  path: '/v1/incidents/{incidentId}',
  tags: ['incidents'],
  summary: 'Get one incident',
  ...access('member'),
  request: { params: IncidentIdParam },
  responses: { 200: jsonResponse(Incident, 'The incident'), ...errorResponses(401, 403, 404) },
});

const setIncidentStatus = createRoute({
  method: 'patch',
  path: '/v1/incidents/{incidentId}',
  tags: ['incidents'],
  summary: 'Move an incident to a status (any of the seven; a closed incident reopens)',
  ...access('member'),
  request: {
    params: IncidentIdParam,
    body: { required: true, content: { 'application/json': { schema: UpdateIncidentBody } } },
  },
  responses: {
    200: jsonResponse(Incident, 'The incident after the update'),
    ...errorResponses(400, 401, 403, 404, 409),
  },
});

export function registerIncidentRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(openIncident, async (c) => {
    const opened = await c.var.services.incidents.create(requesterOf(c), c.req.valid('json'));
    const row = opened.incident;
    return c.json(
      {
        incidentId: row.id,
        title: row.title,
        severity: row.severity,
        status: row.status,
        source: row.source,
        createdAt: row.createdAt.toISOString(),
        investigationsRemaining: opened.investigationsRemaining,
        eventsRemaining: opened.eventsRemaining,
      },
      201,
    );
  });

  app.openapi(listIncidentsRoute, async (c) => {
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, query.order) : undefined;
    const page = await listIncidents(deps.db, {
      tenantId: c.var.auth.tenantId,
      ...(query.severity ? { severity: query.severity } : {}),
      ...(query.status ? { status: query.status } : {}),
      order: query.order,
      limit: query.limit,
      ...(after ? { after } : {}),
    });
    return c.json(
      {
        incidents: page.rows.map((r) => ({
          incidentId: r.id,
          title: r.title,
          severity: r.severity,
          status: r.status,
          source: r.source,
          mergedInto: r.mergedInto,
          createdAt: r.createdAt.toISOString(),
        })),
        count: page.total,
        cursor: nextCursor(page.rows, page.hasMore, query.order),
      },
      200,
    );
  });

  app.openapi(getIncident, async (c) => {
    const row = await findIncident(deps.db, c.var.auth.tenantId, c.req.valid('param').incidentId);
    if (!row) throw new AppError('incident_not_found', 'No incident has that identifier');
    return c.json(toIncidentView(row), 200);
  });

  app.openapi(setIncidentStatus, async (c) => {
    const view = await c.var.services.incidents.setStatus(
      requesterOf(c),
      c.req.valid('param').incidentId,
      c.req.valid('json').status,
    );
    return c.json(view, 200);
  });
}
