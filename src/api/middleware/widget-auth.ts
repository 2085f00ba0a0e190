/**
 * The widget's credentials, judged before the JWT's (app.ts runs this first on principal paths):
 * a publishable key (`wpk_…`) on `POST /v1/widget/sessions`, from one of its allowed origins, and
 * a session token (`wst_…`) on its own session's endpoints only. Anywhere else such a credential
 * is left to bearer-auth, which refuses it as no JWT (401). Not recorded as a user.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { activeKeyByHash, sessionByTokenHash } from '../../db/repositories/widget.js';
import { AppError } from '../../errors.js';
import { hashSecret, PUBLISHABLE_KEY_PREFIX, SESSION_TOKEN_PREFIX } from '../../widget/credentials.js';
import type { AppDeps, AppEnv, WidgetCaller } from '../context.js';
import { refuse, tenantOf, type OnRefused } from './bearer-auth.js';

export const WIDGET_SESSIONS_PATH = '/v1/widget/sessions';
const SESSION_PATH = /^\/v1\/widget\/sessions\/([^/]+)(?:\/(messages|stream|push))?$/;

export const widgetCallerOf = (c: Context<AppEnv>): WidgetCaller | undefined => c.get('widgetCaller');
const setCaller = (c: Context<AppEnv>, caller: WidgetCaller) => c.set('widgetCaller', caller);

function bearer(c: Context): string | undefined {
  return c.req.header('authorization')?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
}

export function widgetCredentials(
  deps: Pick<AppDeps, 'db' | 'clock'>,
  onRefused: OnRefused,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const path = c.req.path;
    if (path === WIDGET_SESSIONS_PATH || SESSION_PATH.test(path)) {
      // Pages of other origins call these (the widget embedded in a portal). Credentials travel in
      // Authorization, never in cookies, so any origin may ask; the key judges its own origins.
      const origin = c.req.header('origin');
      if (origin) {
        c.header('Access-Control-Allow-Origin', origin);
        c.header('Vary', 'Origin');
      }
      if (c.req.method === 'OPTIONS') {
        c.header('Access-Control-Allow-Methods', 'GET, POST, DELETE');
        c.header('Access-Control-Allow-Headers', 'Authorization, Content-Type, Last-Event-ID');
        c.header('Access-Control-Max-Age', '600');
        return c.body(null, 204);
      }
    }
    if (path === WIDGET_SESSIONS_PATH && c.req.method === 'POST') {
      const key = bearer(c);
      if (!key?.startsWith(PUBLISHABLE_KEY_PREFIX)) return next();
      const row = await activeKeyByHash(deps.db, hashSecret(key));
      if (!row) return refuse(c, onRefused, 'The widget key is unknown or revoked');
      const origin = c.req.header('origin');
      if (!origin || !row.allowedOrigins.includes(origin)) {
        // Counted per address like a refused credential, not in the key's tenant's window.
        await onRefused(c);
        throw new AppError(
          'forbidden',
          `This widget key does not open sessions from ${origin ? `the origin ${origin}` : 'a request without an Origin header'}`,
        );
      }
      const principal = { userId: row.id, email: undefined, tenantId: row.tenantId, roles: [] };
      c.set('identified', { principal, tenant: await tenantOf(deps, c, onRefused, principal), by: 'stream-token' });
      setCaller(c, { kind: 'key', keyId: row.id, origin });
      return next();
    }
    const match = SESSION_PATH.exec(path);
    if (!match) return next();
    const token =
      bearer(c) ?? (match[2] === 'stream' && !c.req.header('authorization') ? c.req.query('token') : undefined);
    if (!token?.startsWith(SESSION_TOKEN_PREFIX)) return next();
    const session = await sessionByTokenHash(deps.db, hashSecret(token));
    if (!session) return refuse(c, onRefused, 'The widget session token is unknown');
    // Hono's path is already decoded (a malformed escape left as it is): compared as it stands.
    if (session.id !== match[1]) return refuse(c, onRefused, 'This widget session token is for another session');
    if (session.status !== 'open' || session.expiresAt <= deps.clock())
      throw new AppError('session_not_found', 'The widget session has been closed or has expired');
    const principal = {
      userId: session.id,
      email: undefined,
      tenantId: session.tenantId,
      roles: [],
      expiresAt: session.expiresAt,
    };
    c.set('identified', { principal, tenant: await tenantOf(deps, c, onRefused, principal), by: 'stream-token' });
    setCaller(c, { kind: 'session', session });
    return next();
  };
}
