import type { Context, MiddlewareHandler } from 'hono';
import type { Principal } from '../../auth/tokens.js';
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
 * `Authorization: Bearer <JWT>` → the caller's principal and tenant (`identified`); 401 without a
 * token, for one that does not verify, or for an unknown tenant. A caller the stream token
 * already identified passes through.
 */
export function bearerAuth(deps: Pick<AppDeps, 'db' | 'tokens'>, onRefused: OnRefused): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.var.identified) return next();
    const token = bearerToken(c.req.header('authorization'));
    if (!token) return refuse(c, onRefused, 'A bearer token is required');
    let principal: Principal;
    try {
      principal = await deps.tokens.verify(token);
    } catch (err) {
      c.var.logger.debug({ reason: (err as Error).message }, 'token rejected');
      return refuse(c, onRefused, 'The bearer token is invalid or expired');
    }
    const tenant = await tenantOf(deps, c, onRefused, principal);
    c.set('identified', { principal, tenant, by: 'bearer' });
    return next();
  };
}
