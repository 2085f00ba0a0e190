import type { MiddlewareHandler } from 'hono';
import { AppError } from '../../errors.js';
import type { AppEnv } from '../context.js';

/**
 * Admits an identified caller whose tenant is active (`auth`); 403 for a suspended tenant. Its
 * refusal is not a role's, so it is not audited: `auth` is set only past it.
 */
export function activeTenant(): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    const { principal, tenant } = c.var.identified!;
    if (tenant.status !== 'active') throw new AppError('forbidden', 'This tenant is suspended');
    c.set('auth', { ...principal, tenant });
    return next();
  };
}
