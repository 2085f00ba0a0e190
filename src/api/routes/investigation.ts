import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { and, eq } from 'drizzle-orm';
import { findIncident } from '../../db/repositories/incidents.js';
import { investigations, type InvestigationRow } from '../../db/schema/investigation.js';
import { AppError } from '../../errors.js';
import { requesterOf, type AppDeps, type AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { IncidentIdParam } from '../schemas/incidents.js';
import {
  InvestigationAccepted,
  InvestigationContextAccepted,
  InvestigationContextBody,
  InvestigationResult,
  StartInvestigationBody,
} from '../schemas/investigation.js';

/** Temporal's wrapper of an activity's own failure message: it says nothing to a reader. */
const ACTIVITY_WRAPPER = /^Activity task failed: /;

/**
 * What the result concludes. A failed run ends polling with a root cause saying why and no
 * confidence; the stored conclusion column keeps only conclusions, which learning reads.
 */
function conclusion(row: InvestigationRow): { rootCause: string | null; confidence: number } {
  if (row.status === 'running') return { rootCause: null, confidence: row.confidence };
  if (row.status === 'completed') return { rootCause: row.rootCause, confidence: row.confidence };
  const reason = row.failure?.replace(ACTIVITY_WRAPPER, '').trim() || 'no reason was recorded';
  return { rootCause: `The investigation failed: ${reason}`, confidence: 0 };
}

/** The stored hypotheses as the api shows them (rows from before probabilities read 0). */
function rankedHypotheses(stored: unknown[]) {
  return stored.flatMap((raw) => {
    if (typeof raw !== 'object' || raw === null) return [];
    const h = raw as Record<string, unknown>;
    const text = (v: unknown) => (typeof v === 'string' ? v : '');
    return [
      {
        kind: text(h.kind),
        statement: text(h.statement),
        subject: text(h.subject),
        probability: typeof h.probability === 'number' ? h.probability : 0,
        status: h.status === 'kept' ? ('kept' as const) : ('discarded' as const),
        reason: text(h.reason),
      },
    ];
  });
}

/** Under its documented path, and without the trailing slash (hidden from the document). */
const startInvestigation = (path: '/v1/investigation/' | '/v1/investigation') =>
  createRoute({
    method: 'post',
    path,
    tags: ['investigation'],
    summary: 'Start the investigation of an incident (triage first when it has not run)',
    description:
      "A workflow Update that records the start and answers at once; the specialist agents then run in parallel and `GET /v1/investigation/{incidentId}` shows the result. Counts against the plan's `investigationsPerMonth`.",
    ...access('member'),
    hide: path === '/v1/investigation',
    request: { body: { required: true, content: { 'application/json': { schema: StartInvestigationBody } } } },
    responses: {
      202: jsonResponse(InvestigationAccepted, 'Investigation started'),
      ...errorResponses(400, 401, 403, 404, 409, 429, 503),
    },
  });

const addContext = createRoute({
  method: 'post',
  path: '/v1/investigation/{incidentId}/context',
  tags: ['investigation'],
  summary: 'Add human context to an investigation',
  description:
    'Stored, then signalled to the incident workflow: a running investigation takes it into account when it synthesises; a finished one is re-synthesised with it.',
  ...access('member'),
  request: {
    params: IncidentIdParam,
    body: { required: true, content: { 'application/json': { schema: InvestigationContextBody } } },
  },
  responses: {
    202: jsonResponse(InvestigationContextAccepted, 'Context stored'),
    ...errorResponses(400, 401, 403, 404),
  },
});

const investigationResult = createRoute({
  method: 'get',
  path: '/v1/investigation/{incidentId}',
  tags: ['investigation'],
  summary: 'The investigation result (rootCause null while it runs)',
  description:
    '`status` says when to stop polling: `running` (rootCause null), `completed`, or `failed` (rootCause says that it failed and why, confidence 0).',
  ...access('member'),
  request: { params: IncidentIdParam },
  responses: { 200: jsonResponse(InvestigationResult, 'The investigation'), ...errorResponses(401, 403, 404) },
});

export function registerInvestigationRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  for (const path of ['/v1/investigation/', '/v1/investigation'] as const) {
    app.openapi(startInvestigation(path), async (c) => {
      const started = await c.var.services.incidents.investigate(requesterOf(c), c.req.valid('json').incidentId);
      return c.json(started, 202);
    });
  }

  app.openapi(addContext, async (c) => {
    const { incidentId } = c.req.valid('param');
    const added = await c.var.services.incidents.addContext(requesterOf(c), incidentId, c.req.valid('json').content);
    return c.json(
      {
        incidentId,
        sequence: added.sequence,
        createdAt: added.createdAt.toISOString(),
        resynthesis: added.resynthesis,
      },
      202,
    );
  });

  app.openapi(investigationResult, async (c) => {
    const auth = c.var.auth;
    const { incidentId } = c.req.valid('param');
    const [row] = await deps.db
      .select()
      .from(investigations)
      .where(and(eq(investigations.tenantId, auth.tenantId), eq(investigations.incidentId, incidentId)));
    if (!row) {
      const incident = await findIncident(deps.db, auth.tenantId, incidentId);
      if (!incident) throw new AppError('incident_not_found', 'No incident has that identifier');
      throw new AppError(
        'not_found',
        'No investigation has started for this incident; POST /v1/investigation/ starts one',
      );
    }
    return c.json(
      {
        incidentId,
        status: row.status,
        ...conclusion(row),
        evidence: row.findings,
        recommendedActions: row.recommendedActions,
        hypotheses: row.status === 'completed' ? rankedHypotheses(row.hypotheses) : [],
        failure: row.failure,
        startedAt: row.startedAt.toISOString(),
        completedAt: row.completedAt?.toISOString() ?? null,
      },
      200,
    );
  });
}
