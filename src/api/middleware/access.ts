import type { MiddlewareHandler } from 'hono';
import type { Role } from '../../auth/tokens.js';
import { AppError } from '../../errors.js';
import type { AppEnv, AuthContext } from '../context.js';
import { assertStorableInput } from './unstorable-input.js';

type RouteRole = Extract<Role, 'admin' | 'member'>;

function assertRole(auth: AuthContext | undefined, role: RouteRole): void {
  if (!auth) throw new AppError('unauthorized');
  if (role === 'admin' && !auth.roles.includes('admin')) {
    throw new AppError('forbidden', 'This operation requires the admin role');
  }
  if (role === 'member' && !auth.roles.includes('admin') && !auth.roles.includes('member')) {
    throw new AppError('forbidden', 'This operation requires the member or admin role');
  }
}

/**
 * A JWT route's access, stated once in its createRoute: the OpenAPI security requirement names
 * the role (OpenAPI 3.1 lets a non-OAuth scheme list role names), and the route middleware, which
 * @hono/zod-openapi runs before the request's validators, enforces it and then judges the raw
 * input (storable text). So a caller without a token gets 401 and one without the role 403
 * before anything of the request is judged, never a 400 that describes what the route accepts.
 * The handler's `c.var.auth` is the admitted caller.
 */
export function access(role: RouteRole): {
  security: Array<Record<string, string[]>>;
  middleware: MiddlewareHandler<AppEnv & { Variables: { auth: AuthContext } }>;
} {
  return {
    security: [{ bearerAuth: [role] }],
    middleware: async (c, next) => {
      assertRole(c.var.auth, role);
      await assertStorableInput(c);
      await next();
    },
  };
}
