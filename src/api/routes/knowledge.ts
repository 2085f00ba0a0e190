import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { submitFeedback } from '../../db/repositories/feedback.js';
import { listPatterns, toPatternView } from '../../db/repositories/patterns.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { Feedback, FeedbackBody, ListPatternsQuery, PatternList } from '../schemas/knowledge.js';

const tags = ['knowledge'];

const searchKnowledgeRoute = createRoute({
  method: 'get',
  path: '/v1/knowledge',
  tags,
  summary: 'List learned patterns, newest first',
  ...access('member'),
  request: { query: ListPatternsQuery },
  responses: { 200: jsonResponse(PatternList, 'A page of patterns'), ...errorResponses(400, 401, 403) },
});

const feedbackRoute = createRoute({
  method: 'post',
  path: '/v1/knowledge/feedback',
  tags,
  summary: 'Confirm, reject or correct the root cause of an incident',
  description:
    'One verdict per incident, user and pattern: the same verdict again counts once; a different one replaces it. ' +
    'Without patternId the feedback applies to the pattern the incident matched when exactly one, else it is free-form. ' +
    'correct_rca needs a comment: it becomes the incident root cause and creates or reinforces the pattern it describes.',
  ...access('member'),
  request: { body: { required: true, content: { 'application/json': { schema: FeedbackBody } } } },
  responses: { 201: jsonResponse(Feedback, 'The feedback record'), ...errorResponses(400, 401, 403, 404) },
});

/**
 * The tenant's learned failure patterns (learned when incidents resolve) and the human feedback
 * that confirms, rejects or corrects a root cause. Members and admins.
 */
export function registerKnowledgeRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(searchKnowledgeRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const page = await listPatterns(deps.db, auth.tenantId, {
      ...(query.status ? { status: query.status } : {}),
      ...(query.minConfidence !== undefined ? { minConfidence: query.minConfidence } : {}),
      limit: query.limit,
      ...(after ? { after } : {}),
    });
    return c.json(
      {
        patterns: page.rows.map(toPatternView),
        count: page.total,
        cursor: nextCursor(page.rows, page.hasMore, 'desc'),
      },
      200,
    );
  });

  app.openapi(feedbackRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const { record } = await submitFeedback(deps.db, {
      tenantId: auth.tenantId,
      userId: auth.userId,
      requestId: c.get('requestId'),
      incidentId: body.incidentId,
      ...(body.patternId ? { patternId: body.patternId } : {}),
      type: body.type,
      ...(body.comment !== undefined ? { comment: body.comment } : {}),
    });
    return c.json(record, 201);
  });
}
