import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { and, eq } from 'drizzle-orm';
import { listEvidence, toEvidenceView } from '../../db/repositories/evidence.js';
import { findIncident } from '../../db/repositories/incidents.js';
import { triageResults } from '../../db/schema/investigation.js';
import { AppError } from '../../errors.js';
import { requesterOf, type AppDeps, type AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { IncidentIdParam } from '../schemas/incidents.js';
import { EvidenceQuery, TriageClassification, TriageEvidence } from '../schemas/triage.js';

const triageIncident = createRoute({
  method: 'post',
  path: '/v1/triage/{incidentId}',
  tags: ['triage'],
  summary: 'Triage (or re-triage) an incident and answer its classification',
  description:
    'A workflow Update: an open incident moves to `triaging`, the analyzer classifies it, and the priority becomes the incident severity (`incident.severity_changed` when it differs). Emits `triage.completed` or `triage.failed`.',
  ...access('member'),
  request: { params: IncidentIdParam },
  responses: {
    200: jsonResponse(TriageClassification, 'The classification'),
    ...errorResponses(401, 403, 404, 409, 503),
  },
});

const triageEvidence = createRoute({
  method: 'get',
  path: '/v1/triage/{incidentId}/evidence',
  tags: ['triage'],
  summary: 'The triage evidence object and the incident evidence list, in one object',
  description:
    'Carries both documented shapes (DESIGN §5): `evidence` is the triage evidence object; `items`, `total` and `nextCursor` are the evidence list (filter `type`, `limit` default 50 max 200, `cursor`).',
  ...access('member'),
  request: { params: IncidentIdParam, query: EvidenceQuery },
  responses: {
    200: jsonResponse(TriageEvidence, 'Triage evidence and evidence items'),
    ...errorResponses(400, 401, 403, 404),
  },
});

export function registerTriageRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(triageIncident, async (c) => {
    const classification = await c.var.services.incidents.triage(requesterOf(c), c.req.valid('param').incidentId);
    return c.json(classification, 200);
  });

  app.openapi(triageEvidence, async (c) => {
    const auth = c.var.auth;
    const { incidentId } = c.req.valid('param');
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const row = await findIncident(deps.db, auth.tenantId, incidentId);
    if (!row) throw new AppError('incident_not_found', 'No incident has that identifier');
    const [triage] = await deps.db
      .select()
      .from(triageResults)
      .where(and(eq(triageResults.tenantId, auth.tenantId), eq(triageResults.incidentId, incidentId)));
    if (!triage)
      throw new AppError(
        'triage_not_started',
        'Triage has not run for this incident; POST /v1/triage/{incidentId} runs it',
      );
    const page = await listEvidence(deps.db, {
      tenantId: auth.tenantId,
      incidentId,
      ...(query.type ? { type: query.type } : {}),
      limit: query.limit,
      ...(after ? { after } : {}),
    });
    return c.json(
      {
        incidentId,
        evidence: {
          agentRole: 'triage' as const,
          content: {
            priority: triage.priority,
            summary: triage.summary,
            confidence: triage.confidence,
            reasoning: triage.reasoning,
            suggestedAgents: triage.suggestedAgents,
          },
          model: triage.model,
          tokensUsed: triage.tokensUsed,
          costUsd: triage.costUsd,
        },
        items: page.rows.map(toEvidenceView),
        total: page.total,
        nextCursor: nextCursor(page.rows, page.hasMore, 'desc'),
      },
      200,
    );
  });
}
