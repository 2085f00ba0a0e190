import type { ServerResponse } from 'node:http';
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { AppError } from '../../errors.js';
import { ADMIN_ONLY_EVENTS } from '../../outbox/events.js';
import { createRealtimeHub } from '../../realtime/hub.js';
import { defaultStreamSettings, openEventStream } from '../../realtime/sse.js';
import { issueStreamToken } from '../../realtime/stream-tokens.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { STREAM_PATH } from '../middleware/stream-token.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';

const tags = ['notifications'];

const StreamToken = z
  .object({
    token: z.string().openapi({
      description:
        'For `GET /v1/notifications/stream?token=…`, again (to reconnect) until `expiresAt`; the stream ends then with a `stream.expired` event',
    }),
    expiresAt: z.string().openapi({ format: 'date-time', description: 'In 5 minutes' }),
  })
  .openapi('StreamToken');

const seqParam = z
  .string()
  .regex(/^\d{1,15}$/, 'must be an event id (a non-negative integer)')
  .optional();

const StreamQuery = z.object({
  lastEventId: seqParam.openapi({ description: 'Resume after this event id (same as the Last-Event-ID header)' }),
  types: z
    .string()
    .max(2000)
    .optional()
    .openapi({ description: 'Comma-separated event types to receive (all when absent)' }),
  token: z
    .string()
    .max(200)
    .optional()
    .openapi({ description: 'A stream token from POST /v1/notifications/stream-token (never an access token)' }),
});

const streamTokenRoute = createRoute({
  method: 'post',
  path: '/v1/notifications/stream-token',
  tags,
  summary: 'A short-lived token to open (and reopen) the event stream with ?token=',
  ...access('member'),
  responses: {
    201: jsonResponse(StreamToken, 'The token (valid 5 minutes, for the stream only)'),
    ...errorResponses(401, 403, 429),
  },
});

const streamRoute = createRoute({
  method: 'get',
  path: STREAM_PATH,
  tags,
  summary: "Server-Sent Events of the tenant's events, resumable with Last-Event-ID",
  ...access('member'),
  request: { query: StreamQuery, headers: z.object({ 'last-event-id': seqParam }) },
  responses: {
    200: {
      description:
        'An event stream: `id:` (event id), `event:` (type), `data:` (JSON); `: ping` every 15 s. When the credential expires, a last message `event: stream.expired` (no `id:`; data `{ type, reason: "token_expired", expiresAt }`), then the stream ends',
      content: { 'text/event-stream': { schema: z.string() } },
    },
    ...errorResponses(400, 401, 403, 429),
  },
});

/**
 * The real-time stream of the caller's tenant's events (Server-Sent Events), resumable with
 * `Last-Event-ID`, and the short-lived tokens that let `EventSource` (no headers) open it. A
 * stream ends when its credential expires.
 */
export function registerStreamRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const hub = deps.realtime?.hub ?? createRealtimeHub({ sql: deps.sql, logger: deps.logger });
  const settings = { ...defaultStreamSettings, ...deps.realtime?.settings };
  /** Open streams per tenant and user on this process. */
  const openStreams = new Map<string, number>();

  app.openapi(streamTokenRoute, async (c) => {
    const auth = c.var.auth;
    const issued = await issueStreamToken(deps.db, auth, deps.clock(), c.get('requestId'), settings.tokenTtlSeconds);
    return c.json({ token: issued.token, expiresAt: issued.expiresAt.toISOString() }, 201);
  });

  app.openapi(streamRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const header = c.req.valid('header')['last-event-id'];
    const resumeFrom = header ?? query.lastEventId;
    const types = query.types
      ? new Set(
          query.types
            .split(',')
            .map((t) => t.trim())
            .filter((t) => t !== ''),
        )
      : undefined;
    if (types?.size === 0) throw new AppError('validation_error', 'types: must name at least one event type');
    const holder = `${auth.tenantId}:${auth.userId}`;
    const held = openStreams.get(holder) ?? 0;
    if (held >= settings.maxStreamsPerUser) {
      c.header('Retry-After', '5');
      throw new AppError(
        'rate_limit_exceeded',
        `At most ${settings.maxStreamsPerUser} event streams may be open at once per user; close one first`,
      );
    }
    openStreams.set(holder, held + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = (openStreams.get(holder) ?? 1) - 1;
      if (left > 0) openStreams.set(holder, left);
      else openStreams.delete(holder);
    };
    const body = await openEventStream({
      hub,
      tenantId: auth.tenantId,
      lastEventId: resumeFrom === undefined ? undefined : Number(resumeFrom),
      types,
      hidden: auth.roles.includes('admin') ? undefined : ADMIN_ONLY_EVENTS,
      settings,
      endsAt: auth.expiresAt,
      signal: c.req.raw.signal,
      logger: c.get('logger'),
      onEnd: release,
      // Served by @hono/node-server, the response is a Node one: destroying its socket ends the
      // stream quietly (its reader is cancelled), where an errored stream is printed as a failure.
      drop: () => {
        const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
        if (!outgoing?.headersSent) return false;
        outgoing.destroy();
        return true;
      },
    }).catch((err: unknown) => {
      release();
      throw err;
    });
    // Through the context, so the headers set before (X-RateLimit-*, X-Request-Id) go out too.
    return c.body(body, 200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
  });
}
