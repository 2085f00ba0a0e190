import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { createBuiltinProvider } from '../../analysis/providers.js';
import {
  answerChat,
  findOwnSession,
  listOwnSessions,
  listSessionMessages,
  toMessageView,
  toSessionView,
} from '../../assistant/chat.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  ChatBody,
  ChatMessageList,
  ChatReply,
  ChatSessionList,
  ListMessagesQuery,
  ListSessionsQuery,
  SessionIdParam,
} from '../schemas/memory.js';

const tags = ['memory'];

const chatRoute = createRoute({
  method: 'post',
  path: '/v1/memory/chat',
  tags,
  summary: "Ask the assistant about the tenant's incident history, patterns and runbooks",
  description:
    'Answers from full-text retrieval over incidents, investigations, evidence, patterns and runbooks (anchored to `incidentId` when given, aware of the earlier turns of `sessionId`). Counts one chat message against the monthly quota.',
  ...access('member'),
  request: { body: { required: true, content: { 'application/json': { schema: ChatBody } } } },
  responses: { 200: jsonResponse(ChatReply, 'The assistant chat reply'), ...errorResponses(400, 401, 403, 404, 429) },
});

const listSessionsRoute = createRoute({
  method: 'get',
  path: '/v1/memory/sessions',
  tags,
  summary: 'List your chat sessions, newest first',
  ...access('member'),
  request: { query: ListSessionsQuery },
  responses: { 200: jsonResponse(ChatSessionList, 'A page of your sessions'), ...errorResponses(400, 401, 403) },
});

const sessionMessagesRoute = createRoute({
  method: 'get',
  path: '/v1/memory/sessions/{sessionId}/messages',
  tags,
  summary: 'The messages of one of your chat sessions, oldest first',
  ...access('member'),
  request: { params: SessionIdParam, query: ListMessagesQuery },
  responses: {
    200: jsonResponse(ChatMessageList, 'A page of the conversation'),
    ...errorResponses(400, 401, 403, 404),
  },
});

/**
 * The assistant chat over the tenant's history (incidents, investigations, evidence, patterns,
 * runbooks) and the caller's own conversations. Members and admins; a session belongs to the
 * user who started it.
 */
export function registerMemoryRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const model = deps.model ?? createBuiltinProvider();

  app.openapi(chatRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const reply = await answerChat(
      { db: deps.db, model, clock: deps.clock, logger: c.get('logger') },
      {
        tenant: auth.tenant,
        userId: auth.userId,
        requestId: c.get('requestId'),
        message: body.message,
        sessionId: body.sessionId,
        incidentId: body.incidentId,
      },
    );
    return c.json(reply, 200);
  });

  app.openapi(listSessionsRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const page = await listOwnSessions(deps.db, {
      tenantId: auth.tenantId,
      userId: auth.userId,
      limit: query.limit,
      after: query.cursor ? decodeCursor(query.cursor, 'desc') : undefined,
    });
    return c.json(
      {
        items: page.rows.map(toSessionView),
        total: page.total,
        nextCursor: nextCursor(page.rows, page.hasMore, 'desc'),
      },
      200,
    );
  });

  app.openapi(sessionMessagesRoute, async (c) => {
    const auth = c.var.auth;
    const { sessionId } = c.req.valid('param');
    const query = c.req.valid('query');
    await findOwnSession(deps.db, auth.tenantId, auth.userId, sessionId);
    const page = await listSessionMessages(deps.db, {
      tenantId: auth.tenantId,
      sessionId,
      limit: query.limit,
      after: query.cursor ? decodeCursor(query.cursor, 'asc') : undefined,
    });
    return c.json(
      {
        sessionId,
        items: page.rows.map(toMessageView),
        total: page.total,
        nextCursor: nextCursor(page.rows, page.hasMore, 'asc'),
      },
      200,
    );
  });
}
