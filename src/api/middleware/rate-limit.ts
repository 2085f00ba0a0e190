import type { Context } from 'hono';
import type { RateLimitResult } from '../../db/repositories/rate-limits.js';
import { AppError } from '../../errors.js';

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
