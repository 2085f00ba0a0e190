import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { Principal } from '../../auth/tokens.js';
import { membershipOf } from '../../db/repositories/memberships.js';
import { findTenant } from '../../db/repositories/tenants.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';

/** Said before a credential is refused (401): the refusal is counted in its address's window. */
export type OnRefused = (c: Context<AppEnv>) => Promise<void>;

export async function refuse(c: Context<AppEnv>, onRefused: OnRefused, message: string): Promise<never> {
  await onRefused(c);
  throw new AppError('unauthorized', message);
}

/** The principal's tenant; 401 when the token names none that exists. */
export async function tenantOf(
  deps: Pick<AppDeps, 'db'>,
  c: Context<AppEnv>,
  onRefused: OnRefused,
  principal: Principal,
) {
  const tenant = await findTenant(deps.db, principal.tenantId);
  return tenant ?? refuse(c, onRefused, 'The token names an unknown tenant');
}

function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return match?.[1];
}

/**
 * The cookie sign-in sets for a browser: its access token, sent only to the integration connect
 * path (a browser cannot add a bearer header to a link it follows).
 */
export const SESSION_COOKIE = 'iis_session';
export const SESSION_COOKIE_PATH = '/v1/integrations/connect';
const CONNECT_START = /^\/v1\/integrations\/connect\/[^/]+$/;

function credentialOf(c: Context<AppEnv>): string | undefined {
  const header = c.req.header('authorization');
  if (header !== undefined || c.req.method !== 'GET' || !CONNECT_START.test(c.req.path)) return bearerToken(header);
  return getCookie(c, SESSION_COOKIE);
}

/** Users the service signed in (`usr_…`) count as the member they are now, not as their token says. */
const SIGNED_IN_USER = /^usr_[0-9a-z]{26}$/;

async function asMemberNow(deps: Pick<AppDeps, 'db'>, principal: Principal): Promise<Principal | undefined> {
  if (!SIGNED_IN_USER.test(principal.userId)) return principal;
  const membership = await membershipOf(deps.db, principal.tenantId, principal.userId);
  return membership ? { ...principal, roles: [membership.role] } : undefined;
}

/**
 * `Authorization: Bearer <JWT>` → the caller's principal and tenant (`identified`); 401 without a
 * token, for one that does not verify, for an unknown tenant, or for a signed-in person no
 * longer a member (ADR 0273). A caller the stream token already identified passes through.
 */
export function bearerAuth(deps: Pick<AppDeps, 'db' | 'tokens'>, onRefused: OnRefused): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.var.identified) return next();
    const token = credentialOf(c);
    if (!token) return refuse(c, onRefused, 'A bearer token is required');
    let principal: Principal;
    try {
      principal = await deps.tokens.verify(token);
    } catch (err) {
      c.var.logger.debug({ reason: (err as Error).message }, 'token rejected');
      return refuse(c, onRefused, 'The bearer token is invalid or expired');
    }
    // A role changed or a member removed takes effect at once, not when the token expires. The
    // two reads are independent: one round trip's wait, not two.
    const [member, tenant] = await Promise.all([asMemberNow(deps, principal), findTenant(deps.db, principal.tenantId)]);
    if (!member) return refuse(c, onRefused, 'The token is of a person who is no longer a member of its tenant');
    if (!tenant) return refuse(c, onRefused, 'The token names an unknown tenant');
    c.set('identified', { principal: member, tenant, by: 'bearer' });
    return next();
  };
}
