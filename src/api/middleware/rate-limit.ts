import type { Context, MiddlewareHandler } from 'hono';
import { countRequest, type RateLimitResult } from '../../db/repositories/rate-limits.js';
import { rateLimitPerMinute } from '../../domain/plans.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { clientAddress } from './client-address.js';

type RateLimitDeps = Pick<AppDeps, 'relaxedSql' | 'clock' | 'config'>;

/** Sets the X-RateLimit headers of the caller's window. */
export function showRateLimit(c: Context, result: RateLimitResult): void {
  c.header('X-RateLimit-Limit', String(result.limit));
  c.header('X-RateLimit-Remaining', String(result.remaining));
  c.header('X-RateLimit-Reset', String(result.resetAt));
}

/** Sets the X-RateLimit headers and throws 429 when the window is exhausted. */
export function applyRateLimit(c: Context, result: RateLimitResult, now: Date): void {
  showRateLimit(c, result);
  if (!result.allowed) {
    const retryAfter = Math.max(1, result.resetAt - Math.floor(now.getTime() / 1000));
    c.header('Retry-After', String(retryAfter));
    throw new AppError(
      'rate_limit_exceeded',
      `Rate limit of ${result.limit} requests per minute exceeded; retry after ${new Date(result.resetAt * 1000).toISOString()} (in ${retryAfter} s)`,
    );
  }
}

/**
 * Counts the request in its client address's public window (headers; 429 past it). Public routes
 * are counted so, and so is a refused credential, which names no tenant to count against: a 401
 * carries the headers too, and guessing tokens is throttled.
 */
export function countAddress(deps: RateLimitDeps): (c: Context) => Promise<void> {
  return async (c) => {
    const address = clientAddress(c, deps.config.trustProxy);
    applyRateLimit(
      c,
      await countRequest(deps.relaxedSql, `ip:${address}`, deps.config.publicRateLimitPerMinute),
      deps.clock(),
    );
  };
}

export function addressRateLimit(deps: RateLimitDeps): MiddlewareHandler<AppEnv> {
  const count = countAddress(deps);
  return async (c, next) => {
    await count(c);
    return next();
  };
}

/**
 * Counts an identified caller in its tenant's window, by plan. Before the tenant's status is
 * judged: a suspended tenant's requests count too (429 past it), since each still costs a token
 * check and a lookup (ADR 0212).
 */
export function tenantRateLimit(deps: RateLimitDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { tenant } = c.var.identified!;
    applyRateLimit(
      c,
      await countRequest(deps.relaxedSql, `tenant:${tenant.id}`, rateLimitPerMinute(tenant)),
      deps.clock(),
    );
    return next();
  };
}
