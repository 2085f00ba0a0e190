import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../context.js';

/**
 * What a path is gated by: `probe` (the health probes: counted in this process, never refused),
 * `address` (public routes and signed export downloads: rate limited per client address),
 * `webhook-key` (its own API key gate, in the route), `principal` (a JWT, or the stream route's
 * token: rate limited per tenant) and `none` (not an api path: it falls to 404).
 */
export type Gate = 'probe' | 'address' | 'webhook-key' | 'principal' | 'none';

// The Prometheus scrape is gated like a probe: no JWT, no tenant window (METRICS_TOKEN guards it).
const probePaths = new Set(['/health', '/health/detailed', '/metrics']);
const publicPaths = new Set([
  '/v1/billing/plans',
  '/v1/integrations/catalog',
  '/openapi.json',
  '/docs',
  // A refresh token is their credential.
  '/v1/auth/refresh',
  '/v1/auth/logout',
]);
/** Sign-in (`/auth/{provider}` and its callback) and an integration's OAuth callback: their `state` is the credential. */
const OAUTH_PATH = /^\/auth\/[^/]+(\/callback)?$|^\/v1\/integrations\/connect\/[^/]+\/callback$/;
/** Signed export download URLs carry their own credential (an HMAC). */
const EXPORT_DOWNLOAD_PATH = /^\/v1\/audit\/export\/[^/]+\/download$/;

export function gateOf(path: string): Gate {
  if (probePaths.has(path)) return 'probe';
  if (publicPaths.has(path) || path.startsWith('/docs/') || EXPORT_DOWNLOAD_PATH.test(path) || OAUTH_PATH.test(path))
    return 'address';
  if (!path.startsWith('/v1/') && !path.startsWith('/api/v1/')) return 'none';
  if (path.startsWith('/v1/webhooks/')) return 'webhook-key';
  return 'principal';
}

/** Runs `middleware` on the paths of one gate only. */
export function behind(gate: Gate, middleware: MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> {
  return (c, next) => (gateOf(c.req.path) === gate ? middleware(c, next) : next());
}

/** Runs `middleware` on every path but those of one gate. */
export function exceptBehind(gate: Gate, middleware: MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> {
  return (c, next) => (gateOf(c.req.path) === gate ? next() : middleware(c, next));
}
