import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { createBuiltinProvider } from '../../analysis/providers.js';
import { AppError } from '../../errors.js';
import {
  askInWidgetSession,
  closeWidgetSession,
  openWidgetSession,
  subscribeToWidgetSession,
  toSubscriptionView,
  type WidgetApiDeps,
  type WidgetServiceDeps,
} from '../../widget/sessions.js';
import { widgetEventStream } from '../../widget/stream.js';
import { widgetStreamWakeups } from '../../widget/stream-wakeups.js';
import type { AppDeps, AppEnv } from '../context.js';
import { assertStorableInput } from '../middleware/unstorable-input.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import {
  WidgetMessageBody,
  WidgetPushBody,
  WidgetPushSubscription,
  WidgetReply,
  WidgetSessionOpened,
  WidgetSessionParam,
  WidgetStreamQuery,
} from '../schemas/widget.js';
import { widgetCallerOf } from '../middleware/widget-auth.js';

const tags = ['widget'];
const sessionSecurity = [{ widgetSession: [] }];

/**
 * Who may open a session: a member or admin (JWT), or a publishable key from an allowed origin
 * (judged in widget-auth). Like `access`, judged before anything of the request.
 */
const opener: MiddlewareHandler<AppEnv> = async (c, next) => {
  const auth = c.var.auth;
  if (!auth) throw new AppError('unauthorized');
  if (widgetCallerOf(c)?.kind !== 'key' && !auth.roles.includes('admin') && !auth.roles.includes('member'))
    throw new AppError('forbidden', 'This operation requires the member or admin role, or a widget key');
  await assertStorableInput(c);
  await next();
};

/** A session-token route's raw input is judged as a JWT route's; the token itself in the handler (sessionOf). */
const storable: MiddlewareHandler<AppEnv> = async (c, next) => {
  await assertStorableInput(c);
  await next();
};

/** The session the request's token opened, which must be the one in the path (widget-auth checked it). */
function sessionOf(c: Context) {
  const caller = widgetCallerOf(c);
  if (caller?.kind !== 'session') throw new AppError('unauthorized', "This endpoint takes the widget session's token");
  return caller.session;
}

const openRoute = createRoute({
  method: 'post',
  path: '/v1/widget/sessions',
  tags,
  summary: 'Open a widget session',
  description:
    'With a member or admin token, or a publishable widget key (`Authorization: Bearer wpk_…`) sent from one of its allowed origins (`Origin`). Starts the session’s workflow: its inactivity deadline (the tenant’s widget settings, 30 minutes by default) moves with each message.',
  security: [{ bearerAuth: ['member'] }, { widgetKey: [] }],
  middleware: opener,
  responses: {
    201: jsonResponse(WidgetSessionOpened, 'The session, its token and its deadline'),
    ...errorResponses(401, 403, 429, 503),
  },
});

const messageRoute = createRoute({
  method: 'post',
  path: '/v1/widget/sessions/{sessionId}/messages',
  tags,
  summary: 'Ask the assistant in a widget session',
  description:
    'The assistant of `POST /v1/memory/chat` (same quota, sources and tenant scope); answers once the reply is complete, moves the session’s deadline and pushes `message.complete`.',
  security: sessionSecurity,
  middleware: storable,
  request: {
    params: WidgetSessionParam,
    body: { required: true, content: { 'application/json': { schema: WidgetMessageBody } } },
  },
  responses: {
    200: jsonResponse(WidgetReply, 'The reply and its sources'),
    ...errorResponses(400, 401, 404, 429, 503),
  },
});

const streamRoute = createRoute({
  method: 'get',
  path: '/v1/widget/sessions/{sessionId}/stream',
  tags,
  summary: 'Server-Sent Events of a widget session, resumable with Last-Event-ID',
  description:
    'Events `message.complete`, `session.expiry_warning` and `session.closed` (`id:` the event id, `data:` JSON with `type`); the stream ends after `session.closed`. The token as `Authorization: Bearer` or `?token=`.',
  security: sessionSecurity,
  middleware: storable,
  request: {
    params: WidgetSessionParam,
    query: WidgetStreamQuery,
    headers: z.object({
      'last-event-id': z
        .string()
        .regex(/^[0-9]{1,15}$/)
        .optional(),
    }),
  },
  responses: {
    200: { description: 'An event stream', content: { 'text/event-stream': { schema: z.string() } } },
    ...errorResponses(400, 401, 404, 429),
  },
});

const closeRoute = createRoute({
  method: 'delete',
  path: '/v1/widget/sessions/{sessionId}',
  tags,
  summary: 'Close a widget session; its token stops working at once',
  security: sessionSecurity,
  middleware: storable,
  request: { params: WidgetSessionParam },
  responses: { 204: { description: 'Closed' }, ...errorResponses(401, 404, 429) },
});

const pushRoute = createRoute({
  method: 'post',
  path: '/v1/widget/sessions/{sessionId}/push',
  tags,
  summary: 'Subscribe an HTTPS endpoint to the session’s events',
  description:
    'Pushes `message.complete` and/or `session.expiry_warning` as JSON POSTs with `X-Widget-Delivery` (the same id on every retry) and, with a secret, `X-Widget-Signature: sha256=<HMAC-SHA256 of the raw body>`. The URL must be https and publicly reachable (private and loopback addresses only when the operator allows their network). A subscription whose endpoint keeps failing is disabled.',
  security: sessionSecurity,
  middleware: storable,
  request: {
    params: WidgetSessionParam,
    body: { required: true, content: { 'application/json': { schema: WidgetPushBody } } },
  },
  responses: {
    201: jsonResponse(WidgetPushSubscription, 'The push subscription'),
    ...errorResponses(400, 401, 404, 429),
  },
});

const unavailable = () => new AppError('service_unavailable', 'Widget sessions are not configured in this process');

/** The widget session endpoints (`widget` absent: they answer 503, the routes still documented). */
export function registerWidgetRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps, widget: WidgetApiDeps | undefined): void {
  const model = deps.model ?? createBuiltinProvider();
  const service = (): WidgetServiceDeps => {
    if (!widget) throw unavailable();
    return { db: deps.db, clock: deps.clock, model, skills: deps.skills, widget };
  };
  app.openAPIRegistry.registerComponent('securitySchemes', 'widgetSession', {
    type: 'http',
    scheme: 'bearer',
    description: 'A widget session token (wst_…), valid only on its own session’s endpoints',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'widgetKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'A publishable widget key (wpk_…), from one of its allowed origins',
  });

  app.openapi(openRoute, async (c) => {
    const caller = widgetCallerOf(c);
    const auth = c.var.auth!;
    const opened = await openWidgetSession(service(), {
      tenant: auth.tenant,
      keyId: caller?.kind === 'key' ? caller.keyId : null,
      userId: caller?.kind === 'key' ? null : auth.userId,
      origin: caller?.kind === 'key' ? caller.origin : (c.req.header('origin') ?? null),
    });
    return c.json(opened, 201);
  });

  app.openapi(messageRoute, async (c) => {
    const session = sessionOf(c);
    const { message } = c.req.valid('json');
    const reply = await askInWidgetSession(
      { ...service(), logger: c.var.logger },
      { tenant: c.var.auth!.tenant, session, message, requestId: c.var.requestId },
    );
    return c.json(reply, 200);
  });

  app.openapi(streamRoute, (c) => {
    const session = sessionOf(c);
    const settings = service().widget.settings;
    const resume = c.req.valid('header')['last-event-id'] ?? c.req.valid('query').lastEventId;
    const body = widgetEventStream({
      db: deps.db,
      wakeups: widgetStreamWakeups(deps.sql, deps.logger),
      tenantId: session.tenantId,
      sessionId: session.id,
      afterId: resume ? Number(resume) : 0,
      heartbeatMs: settings.streamHeartbeatMs,
      clock: deps.clock,
    });
    return c.body(body, 200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
  });

  app.openapi(closeRoute, async (c) => {
    const session = sessionOf(c);
    await closeWidgetSession(service(), { tenantId: session.tenantId, sessionId: session.id });
    return c.body(null, 204);
  });

  app.openapi(pushRoute, async (c) => {
    const session = sessionOf(c);
    const body = c.req.valid('json');
    const row = await subscribeToWidgetSession(service(), {
      tenantId: session.tenantId,
      sessionId: session.id,
      url: body.url,
      events: body.events,
      secret: body.secret,
    });
    return c.json(toSubscriptionView(row), 201);
  });
}
