import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { endSession, REFRESH_TOKEN_PREFIX, refreshSession } from '../../auth/sessions.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';

/** A refresh token as we issue it: the prefix and 43 base62 characters (256 bits). */
const RefreshTokenBody = z
  .object({
    refreshToken: z
      .string()
      .max(200)
      .regex(new RegExp(`^${REFRESH_TOKEN_PREFIX}[0-9A-Za-z]{43}$`), 'Not a refresh token this service issued'),
  })
  .strict()
  .openapi('RefreshTokenBody');

export const TokenPairSchema = z
  .object({
    accessToken: z.string().openapi({ description: 'A JWT (HS256) with sub, email, tenant_id, roles, iss, aud, exp' }),
    refreshToken: z.string().openapi({ description: 'Opaque; single use: each refresh returns a new one' }),
    tokenType: z.literal('Bearer'),
    expiresIn: z.number().int().openapi({ description: "Seconds until the access token's expiry" }),
    tenantId: z.string(),
  })
  .openapi('TokenPair');

const refreshRoute = createRoute({
  method: 'post',
  path: '/v1/auth/refresh',
  tags: ['auth'],
  summary: 'Exchange a refresh token for a new pair (the old one is spent; reusing it revokes the session)',
  request: { body: { required: true, content: { 'application/json': { schema: RefreshTokenBody } } } },
  responses: { 200: jsonResponse(TokenPairSchema, 'A new pair'), ...errorResponses(400, 401, 429) },
});

const logoutRoute = createRoute({
  method: 'post',
  path: '/v1/auth/logout',
  tags: ['auth'],
  summary: 'End the session of a refresh token (every token of its family)',
  request: { body: { required: true, content: { 'application/json': { schema: RefreshTokenBody } } } },
  responses: { 204: { description: 'Ended (also when it was already ended or unknown)' }, ...errorResponses(400, 429) },
});

/** `POST /v1/auth/refresh` and `POST /v1/auth/logout`: public, the refresh token is the credential. */
export function registerAuthTokenRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(refreshRoute, async (c) => {
    const sessions = deps.identity?.sessions;
    if (!sessions) throw new AppError('unauthorized', 'This service issues no tokens (it has no signing secret)');
    const pair = await refreshSession(
      deps.db,
      sessions,
      c.req.valid('json').refreshToken,
      deps.clock(),
      c.get('requestId'),
    );
    c.header('Cache-Control', 'no-store');
    return c.json(pair, 200);
  });
  app.openapi(logoutRoute, async (c) => {
    await endSession(deps.db, c.req.valid('json').refreshToken, deps.clock(), c.get('requestId'));
    return c.body(null, 204);
  });
}
