import { isIP } from 'node:net';
import type { Context, MiddlewareHandler } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import { rateLimitPerMinute } from '../../domain/plans.js';
import { findTenant } from '../../db/repositories/tenants.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { countRequest } from '../../db/repositories/rate-limits.js';
import { users } from '../../db/schema/remediation.js';
import type { Principal } from '../../auth/tokens.js';
import type { TenantRow } from '../../db/schema/tenants.js';
import { applyRateLimit } from './rate-limit.js';
import { createProbeWindow } from './probe-window.js';
import { useStreamToken } from '../../realtime/stream-tokens.js';

/** The one route that also takes a short-lived stream token as `?token=` (EventSource sends no headers). */
export const STREAM_PATH = '/v1/notifications/stream';

/** Routes that need no JWT; they are rate limited per client address instead. */
const publicPaths = new Set(['/v1/billing/plans', '/v1/integrations/catalog', '/openapi.json', '/docs']);
/** Signed export download URLs carry their own credential (an HMAC); limited per address. */
const EXPORT_DOWNLOAD_PATH = /^\/v1\/audit\/export\/[^/]+\/download$/;
/** Liveness and readiness probes must not depend on the database: counted in this process only. */
const unmeteredPaths = new Set(['/health', '/health/detailed']);

function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return match?.[1];
}

/**
 * The caller's address. Behind a proxy (`TRUST_PROXY`), the right-most `X-Forwarded-For` entry:
 * the address the proxy in front of us saw. Entries left of it are whatever the client sent (a
 * proxy appends to the header it received), so taking the left-most let any caller pick its own
 * rate-limit window and audited address. Anything but an IP address there is ignored.
 */
export function clientAddress(c: Parameters<MiddlewareHandler>[0], trustProxy: boolean): string {
  if (trustProxy) {
    const nearest = c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim();
    if (nearest && isIP(nearest)) return nearest;
  }
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** A user is written at most once a minute per process (last_seen_at is coarse). */
export const USER_SEEN_INTERVAL_MS = 60_000;
/** Users whose last write a process remembers (about 100 bytes each). */
const MAX_TRACKED_USERS = 100_000;

/**
 * Records who uses the api (`users`: tenant, token subject, email, roles, last seen) so admins can
 * be notified. The first sighting in this process is awaited (a notification right after must
 * find the admin); later ones at most once a minute, without waiting, errors only logged.
 */
export function createUserRecorder(deps: Pick<AppDeps, 'db' | 'clock'>, maxTracked = MAX_TRACKED_USERS) {
  // Insertion order is last-write order (each write re-inserts its key): the oldest is evicted
  // past maxTracked, and is only written once more (awaited) if that user comes back.
  const lastWritten = new Map<string, number>();
  const write = (p: Principal, now: Date) =>
    deps.db
      .insert(users)
      .values({ tenantId: p.tenantId, userId: p.userId, email: p.email ?? null, roles: p.roles, firstSeenAt: now, lastSeenAt: now })
      .onConflictDoUpdate({
        target: [users.tenantId, users.userId],
        set: { email: p.email ?? null, roles: p.roles, lastSeenAt: now },
      });
  return async (p: Principal, log: { error: (obj: object, msg: string) => void }): Promise<void> => {
    const key = `${p.tenantId}\0${p.userId}`;
    const now = deps.clock();
    const last = lastWritten.get(key);
    if (last !== undefined && now.getTime() - last < USER_SEEN_INTERVAL_MS) return;
    lastWritten.delete(key);
    lastWritten.set(key, now.getTime());
    if (lastWritten.size > maxTracked) lastWritten.delete(lastWritten.keys().next().value!);
    if (last === undefined) {
      try {
        await write(p, now);
      } catch (err) {
        // The request still goes on; the next one tries again.
        lastWritten.delete(key);
        log.error({ err, tenantId: p.tenantId, userId: p.userId }, 'recording the user failed');
      }
      return;
    }
    write(p, now).catch((err: unknown) => log.error({ err, tenantId: p.tenantId, userId: p.userId }, 'recording the user failed'));
  };
}

/**
 * Authenticates every non-public route with a JWT (tenant must exist and be active), then
 * rate-limits per tenant by plan; public routes are rate-limited per client address.
 */
export function authenticate(deps: AppDeps): MiddlewareHandler<AppEnv> {
  const recordUser = createUserRecorder(deps);
  const countProbe = createProbeWindow(deps.config.publicRateLimitPerMinute, deps.clock);
  return async (c, next) => {
    const path = c.req.path;
    if (unmeteredPaths.has(path)) {
      countProbe(c, clientAddress(c, deps.config.trustProxy));
      return next();
    }
    if (publicPaths.has(path) || path.startsWith('/docs/') || EXPORT_DOWNLOAD_PATH.test(path)) {
      const address = clientAddress(c, deps.config.trustProxy);
      const limit = deps.config.publicRateLimitPerMinute;
      applyRateLimit(c, await countRequest(deps.relaxedSql, `ip:${address}`, limit), deps.clock());
      return next();
    }
    if (!path.startsWith('/v1/') && !path.startsWith('/api/v1/')) return next(); // falls to 404
    // Webhooks authenticate with an API key (and optional signature) in their own route.
    if (path.startsWith('/v1/webhooks/')) return next();

    let identified: { principal: Principal; tenant: TenantRow; urlToken: string | undefined };
    try {
      identified = await identify(c, path);
    } catch (err) {
      // No tenant to count against: a refused credential counts in its address's public window,
      // so a 401 carries the rate-limit headers too and guessing tokens is throttled (429).
      if (err instanceof AppError && err.code === 'unauthorized') {
        const address = clientAddress(c, deps.config.trustProxy);
        applyRateLimit(c, await countRequest(deps.relaxedSql, `ip:${address}`, deps.config.publicRateLimitPerMinute), deps.clock());
      }
      throw err;
    }
    const { principal, tenant, urlToken } = identified;
    // Counted first: a suspended tenant's requests count in its window too (with the headers,
    // 429 past it), since each still costs a token check and a lookup (decision 212).
    applyRateLimit(c, await countRequest(deps.relaxedSql, `tenant:${tenant.id}`, rateLimitPerMinute(tenant)), deps.clock());
    if (tenant.status !== 'active') throw new AppError('forbidden', 'This tenant is suspended');
    c.set('auth', { ...principal, tenant });
    // A stream token carries no email; its user was recorded when the token was issued.
    if (!urlToken) await recordUser(principal, c.get('logger') ?? deps.logger);
    return next();
  };

  /** The caller named by the request's credential, and its tenant; 401 when there is none. */
  async function identify(c: Context<AppEnv>, path: string) {
    const token = bearerToken(c.req.header('authorization'));
    const urlToken = path === STREAM_PATH && !c.req.header('authorization') ? c.req.query('token') : undefined;
    let principal: Principal;
    if (urlToken) {
      // Only a stream token: an access token in the URL is never accepted.
      const streamPrincipal = await useStreamToken(deps.db, urlToken);
      if (!streamPrincipal) throw new AppError('unauthorized', 'The stream token is unknown or expired');
      principal = { ...streamPrincipal, email: undefined };
    } else {
      if (!token) throw new AppError('unauthorized', 'A bearer token is required');
      try {
        principal = await deps.tokens.verify(token);
      } catch (err) {
        c.get('logger').debug({ reason: (err as Error).message }, 'token rejected');
        throw new AppError('unauthorized', 'The bearer token is invalid or expired');
      }
    }
    const tenant = await findTenant(deps.db, principal.tenantId);
    if (!tenant) throw new AppError('unauthorized', 'The token names an unknown tenant');
    return { principal, tenant, urlToken };
  }
}
