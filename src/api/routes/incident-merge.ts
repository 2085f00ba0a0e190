import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { incidentMergeCommands } from '../../incidents/merge.js';
import { requesterOf, type AppDeps, type AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { MergeIncidentBody, SplitAlertParams } from '../schemas/incident-merge.js';
import { Incident, IncidentIdParam } from '../schemas/incidents.js';

const mergeIncident = createRoute({
  method: 'post',
  path: '/v1/incidents/{incidentId}/merge',
  tags: ['incidents'],
  summary: 'Merge another open incident into this one',
  description:
    "The body's incident's alerts and their deliveries move to this incident (occurrences, last seen and severity follow), and it becomes `closed` with `mergedInto` naming this one, through its workflow: its pending approval is withdrawn, and its `incident.status_changed` carries `mergedInto`. Both incidents must be open and of the caller's tenant. Audited.",
  ...access('member'),
  request: {
    params: IncidentIdParam,
    body: { required: true, content: { 'application/json': { schema: MergeIncidentBody } } },
  },
  responses: {
    200: jsonResponse(Incident, 'The surviving incident after the merge'),
    ...errorResponses(400, 401, 403, 404, 409),
  },
});

const splitAlert = createRoute({
  method: 'post',
  path: '/v1/incidents/{incidentId}/alerts/{alertId}/split',
  tags: ['incidents'],
  summary: 'Split an alert out of an incident to a new one',
  description:
    "The alert and its deliveries move to a new automated incident (its title, severity and service), triaged and investigated as one a webhook opens; `incident.created` carries `splitFrom`. The alert stands alone (`correlation.reason` `fingerprint`). Refused for the incident's only alert and for a resolved or closed incident (409). Audited.",
  ...access('member'),
  request: { params: SplitAlertParams },
  responses: {
    201: jsonResponse(Incident, 'The new incident'),
    ...errorResponses(400, 401, 403, 404, 409),
  },
});

export function registerIncidentMergeRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const commands = incidentMergeCommands(deps);

  app.openapi(mergeIncident, async (c) => {
    const survivor = await commands.merge(
      requesterOf(c),
      c.req.valid('param').incidentId,
      c.req.valid('json').incidentId,
    );
    return c.json(survivor, 200);
  });

  app.openapi(splitAlert, async (c) => {
    const { incidentId, alertId } = c.req.valid('param');
    return c.json(await commands.split(requesterOf(c), incidentId, alertId), 201);
  });
}
