import type { Context, MiddlewareHandler } from 'hono';
import { AppError } from '../../errors.js';
import type { AppEnv } from '../context.js';

/**
 * Judges a webhook's API key from its headers, before its body is read (ADR 0252): a made-up
 * key costs one indexed lookup, shared by the requests of the moment, and never a parse.
 *
 * Refused keys are also counted per client address and tenant path in one-minute windows. Past
 * the limit, that address's requests to that tenant are answered 429 instead of 401, and a key
 * refused there lately is refused without a lookup. A key is never refused for someone else's
 * failures: a key that is valid is looked up and delivers whatever its address or its tenant
 * path has seen, on any replica and after any restart (issue 34, item 3).
 */
export interface WebhookKeyGate {
  /** Resolves when `keyHash` names an active key of `tenantId`; throws 401, or 429 past the window. */
  admit(request: { address: string; tenantId: string; keyHash: string }): Promise<void>;
  /** A request's key was refused after it was admitted (revoked meanwhile, a bad signature). */
  refused(request: { address: string; tenantId: string; keyHash: string }): void;
  /** A delivery with this key was accepted. */
  accepted(tenantId: string, keyHash: string): void;
  /** Seconds until the current window ends (a 429's Retry-After). */
  retryAfter(): number;
  /** The refused-key window of `address` on `tenantId`: the limit, what is left, its end (Unix seconds). */
  window(address: string, tenantId: string): { limit: number; remaining: number; resetAt: number };
}

const WINDOW_MS = 60_000;
/** How long a key found active is admitted without a lookup; the batch judges every delivery anyway. */
const ACTIVE_KEY_TTL_MS = 5 * 60_000;

export interface WebhookKeyGateOptions {
  limitPerMinute: number;
  clock: () => Date;
  /** Whether each (tenant, key hash) names an active key of an active tenant. */
  lookup: (keys: Array<{ tenantId: string; keyHash: string }>) => Promise<boolean[]>;
  /** Entries each map may hold; the oldest goes first. */
  maxEntries?: number;
}

/** Maps keep insertion order: the oldest entry goes first once one holds more than `limit`. */
function bounded<K, V>(entries: Map<K, V>, limit: number): void {
  const oldest = entries.keys().next();
  if (entries.size > limit && !oldest.done) entries.delete(oldest.value);
}

export function createWebhookKeyGate(options: WebhookKeyGateOptions): WebhookKeyGate {
  const maxEntries = options.maxEntries ?? 10_000;
  /** Refused keys per `address\0tenantId` in the current window, with the key hashes refused there. */
  const windows = new Map<string, { start: number; count: number; keys: Set<string> }>();
  /** `tenantId\0keyHash` → when its admission without a lookup ends. */
  const active = new Map<string, number>();
  const now = () => options.clock().getTime();
  const windowOf = (address: string, tenantId: string) => {
    const at = now();
    const window = windows.get(`${address}\0${tenantId}`);
    return window && window.start === at - (at % WINDOW_MS) ? window : undefined;
  };
  const retryAfter = () => Math.max(1, Math.ceil((WINDOW_MS - (now() % WINDOW_MS)) / 1000));
  const tooMany = () =>
    new AppError(
      'rate_limit_exceeded',
      `Too many webhook requests with a refused API key from this address; retry in ${retryAfter()} s`,
    );

  const gate: WebhookKeyGate = {
    async admit({ address, tenantId, keyHash }) {
      const key = `${tenantId}\0${keyHash}`;
      if ((active.get(key) ?? 0) > now()) return;
      const window = windowOf(address, tenantId);
      const over = window !== undefined && window.count >= options.limitPerMinute;
      if (over && window.keys.has(keyHash)) throw tooMany();
      const [found] = await options.lookup([{ tenantId, keyHash }]);
      if (found) {
        gate.accepted(tenantId, keyHash);
        return;
      }
      gate.refused({ address, tenantId, keyHash });
      if (over) throw tooMany();
      throw new AppError('unauthorized', 'The API key is invalid, revoked, or not for this tenant');
    },
    refused({ address, tenantId, keyHash }) {
      active.delete(`${tenantId}\0${keyHash}`);
      const at = now();
      const start = at - (at % WINDOW_MS);
      const id = `${address}\0${tenantId}`;
      let window = windows.get(id);
      if (!window || window.start !== start) {
        windows.delete(id);
        window = { start, count: 0, keys: new Set() };
        windows.set(id, window);
        bounded(windows, maxEntries);
      }
      window.count++;
      if (window.keys.size < 1000) window.keys.add(keyHash);
    },
    accepted(tenantId, keyHash) {
      const key = `${tenantId}\0${keyHash}`;
      active.delete(key);
      active.set(key, now() + ACTIVE_KEY_TTL_MS);
      bounded(active, maxEntries);
    },
    retryAfter,
    window(address, tenantId) {
      const at = now();
      const used = windowOf(address, tenantId)?.count ?? 0;
      return {
        limit: options.limitPerMinute,
        remaining: Math.max(0, options.limitPerMinute - used),
        resetAt: (at - (at % WINDOW_MS) + WINDOW_MS) / 1000,
      };
    },
  };
  return gate;
}

/** The tenant id of a webhook path (`/v1/webhooks/{tenantId}/{provider}`). */
export function webhookTenantOf(path: string): string {
  return decodeURIComponent(path.split('/')[3] ?? '');
}

/**
 * The X-RateLimit headers of a webhook answered before its key's tenant window was read (no key,
 * a refused key or signature, an unknown provider, a body over 4 MiB): the limit that applies to
 * such requests is the gate's, per address and tenant path. Registered before the body limit, so
 * its 413 gets them too; an answer that already carries the tenant's window keeps it.
 */
export function refusedWebhookWindow(
  gate: WebhookKeyGate,
  addressOf: (c: Context<AppEnv>) => string,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (c.res.headers.has('X-RateLimit-Limit')) return;
    let tenantId = '';
    try {
      tenantId = webhookTenantOf(c.req.path);
    } catch {
      // a malformed escape in the path: the window of no tenant
    }
    const { limit, remaining, resetAt } = gate.window(addressOf(c), tenantId);
    c.res.headers.set('X-RateLimit-Limit', String(limit));
    c.res.headers.set('X-RateLimit-Remaining', String(remaining));
    c.res.headers.set('X-RateLimit-Reset', String(resetAt));
  };
}
