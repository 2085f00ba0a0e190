import type { MiddlewareHandler } from 'hono';
import { useStreamToken } from '../../realtime/stream-tokens.js';
import type { AppDeps, AppEnv } from '../context.js';
import { refuse, tenantOf, type OnRefused } from './bearer-auth.js';

/** The one route that also takes a short-lived stream token as `?token=` (EventSource sends no headers). */
export const STREAM_PATH = '/v1/notifications/stream';

/**
 * The stream route's `?token=`, when the request has no Authorization header: the caller's
 * principal and tenant (`identified`), 401 for an unknown or expired token. Only a stream token:
 * an access token in the URL is never accepted.
 */
export function streamToken(deps: Pick<AppDeps, 'db'>, onRefused: OnRefused): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.path !== STREAM_PATH || c.req.header('authorization')) return next();
    const token = c.req.query('token');
    if (!token) return next(); // bearer-auth asks for a bearer token
    const streamPrincipal = await useStreamToken(deps.db, token);
    if (!streamPrincipal) return refuse(c, onRefused, 'The stream token is unknown or expired');
    const principal = { ...streamPrincipal, email: undefined };
    const tenant = await tenantOf(deps, c, onRefused, principal);
    c.set('identified', { principal, tenant, by: 'stream-token' });
    return next();
  };
}
