import type { Context, MiddlewareHandler } from 'hono';
import type { AppDeps, AppEnv } from '../context.js';
import { clientAddress } from './client-address.js';
import { showRateLimit } from './rate-limit.js';

/** Addresses one minute's window remembers; the ones past it share one count. */
const MAX_ADDRESSES = 10_000;
const SHARED = '*';

/**
 * The health probes' one-minute window per client address, held in this process: probes must not
 * depend on PostgreSQL, yet every answer carries the `X-RateLimit-*` headers (interface, Limits).
 * It is counted and shown, never enforced (ADR 0246): a load balancer probes from the same
 * addresses it forwards its clients from, and a probe refused for them would take this instance
 * out of rotation.
 */
export function createProbeWindow(limit: number, clock: () => Date) {
  let windowStart = -1;
  let counts = new Map<string, number>();
  return (c: Context, address: string): void => {
    const minute = Math.floor(clock().getTime() / 60_000) * 60;
    if (minute !== windowStart) {
      windowStart = minute;
      counts = new Map();
    }
    const key = counts.has(address) || counts.size < MAX_ADDRESSES ? address : SHARED;
    const count = (counts.get(key) ?? 0) + 1;
    counts.set(key, count);
    showRateLimit(c, { allowed: true, limit, remaining: Math.max(0, limit - count), resetAt: windowStart + 60 });
  };
}

/** The health probes' window as a middleware: counted and shown per client address. */
export function probeRateLimit(deps: Pick<AppDeps, 'clock' | 'config'>): MiddlewareHandler<AppEnv> {
  const countProbe = createProbeWindow(deps.config.publicRateLimitPerMinute, deps.clock);
  return (c, next) => {
    countProbe(c, clientAddress(c, deps.config.trustProxy));
    return next();
  };
}
