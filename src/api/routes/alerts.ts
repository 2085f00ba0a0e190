import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { alertPosition, listAlerts, listIncidentAlerts, toAlertView } from '../../db/repositories/alerts.js';
import { findIncident } from '../../db/repositories/incidents.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { access } from '../middleware/access.js';
import { AlertList, ListAlertsQuery, ListIncidentAlertsQuery } from '../schemas/alerts.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { IncidentIdParam } from '../schemas/incidents.js';

const tags = ['alerts'];

const incidentAlertsRoute = createRoute({
  method: 'get',
  path: '/v1/incidents/{incidentId}/alerts',
  tags,
  summary: 'The alerts grouped into an incident, oldest first, each with why it was grouped',
  ...access('member'),
  request: { params: IncidentIdParam, query: ListIncidentAlertsQuery },
  responses: { 200: jsonResponse(AlertList, 'A page of alerts'), ...errorResponses(400, 401, 403, 404) },
});

const alertsRoute = createRoute({
  method: 'get',
  path: '/v1/alerts',
  tags,
  summary: "The tenant's alerts, newest first: grouped, held, suppressed, tests and dropped",
  description:
    '`state=pending` shows the alerts a rule holds until it has seen enough of them (minAlerts) or for long enough (forMinutes); `state=test` the tools’ tests and heartbeats, which never open an incident.',
  ...access('member'),
  request: { query: ListAlertsQuery },
  responses: { 200: jsonResponse(AlertList, 'A page of alerts'), ...errorResponses(400, 401, 403) },
});

/** Reads of the alerts behind incidents; the webhook path writes them. */
export function registerAlertRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(incidentAlertsRoute, async (c) => {
    const auth = c.var.auth;
    const { incidentId } = c.req.valid('param');
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'asc') : undefined;
    if (!(await findIncident(deps.db, auth.tenantId, incidentId)))
      throw new AppError('incident_not_found', 'No incident has that identifier');
    const page = await listIncidentAlerts(deps.db, { tenantId: auth.tenantId, incidentId, limit: query.limit, after });
    const last = page.rows.at(-1);
    return c.json(
      {
        items: page.rows.map(toAlertView),
        total: page.total,
        nextCursor: page.hasMore && last ? encodeCursor({ ...alertPosition(last), order: 'asc' }) : null,
      },
      200,
    );
  });

  app.openapi(alertsRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const page = await listAlerts(deps.db, {
      tenantId: auth.tenantId,
      state: query.state,
      incidentId: query.incidentId,
      service: query.service,
      limit: query.limit,
      after: query.cursor ? decodeCursor(query.cursor, 'desc') : undefined,
    });
    const last = page.rows.at(-1);
    return c.json(
      {
        items: page.rows.map(toAlertView),
        total: page.total,
        nextCursor: page.hasMore && last ? encodeCursor({ ...alertPosition(last), order: 'desc' }) : null,
      },
      200,
    );
  });
}
