import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../context.js';

/**
 * Webhook requests whose API key is refused, counted per client address in fixed one-minute
 * windows on this api process (decision 182). A webhook's key is judged inside an ingestion
 * batch (decision 139), so a request with a made-up key is read, parsed and queued like any
 * other before it is refused: a flood of them could fill the batch queue, and every tenant's
 * monitoring tools would then get 503. Past the limit, an address's requests are refused at
 * once (429), except with a key that was accepted recently on this process and not refused
 * since, so a tenant's tool behind the same address as the flood keeps delivering.
 */
export interface KeyFailureGuard {
  /** Seconds `address` must wait before a request with `keyHash` is read; 0 when it may go on. */
  blockedFor(address: string, keyHash: string): number;
  /** A request from `address` was refused for its key (`keyHash`), which is trusted no more. */
  refused(address: string, keyHash: string): void;
  /** A request with `keyHash` was accepted. */
  accepted(keyHash: string): void;
  /** `address`'s current window: the limit, what is left of it, and its end (Unix seconds). */
  window(address: string): { limit: number; remaining: number; resetAt: number };
}

const WINDOW_MS = 60_000;

export function createKeyFailureGuard(options: { limitPerMinute: number; clock: () => Date; maxAddresses?: number; maxTrustedKeys?: number }): KeyFailureGuard {
  const windows = new Map<string, { start: number; count: number }>();
  const trusted = new Set<string>();
  const maxAddresses = options.maxAddresses ?? 10_000;
  const maxTrustedKeys = options.maxTrustedKeys ?? 10_000;
  const windowStart = () => {
    const now = options.clock().getTime();
    return { now, start: now - (now % WINDOW_MS) };
  };
  // Maps and sets keep insertion order: the oldest entry goes first when one is full.
  const dropOldest = (entries: Map<string, unknown> | Set<string>, limit: number) => {
    const oldest = entries.keys().next().value;
    if (entries.size > limit && oldest !== undefined) entries.delete(oldest);
  };
  return {
    blockedFor(address, keyHash) {
      if (trusted.has(keyHash)) return 0;
      const window = windows.get(address);
      const { now, start } = windowStart();
      if (!window || window.start !== start || window.count < options.limitPerMinute) return 0;
      return Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000));
    },
    refused(address, keyHash) {
      // A revoked key (or one sent with bad signatures) is counted like any other refused key.
      trusted.delete(keyHash);
      const { start } = windowStart();
      const window = windows.get(address);
      if (window && window.start === start) {
        window.count++;
        return;
      }
      windows.delete(address);
      windows.set(address, { start, count: 1 });
      dropOldest(windows, maxAddresses);
    },
    accepted(keyHash) {
      if (trusted.has(keyHash)) return;
      trusted.add(keyHash);
      dropOldest(trusted, maxTrustedKeys);
    },
    window(address) {
      const { start } = windowStart();
      const window = windows.get(address);
      const used = window && window.start === start ? window.count : 0;
      return { limit: options.limitPerMinute, remaining: Math.max(0, options.limitPerMinute - used), resetAt: (start + WINDOW_MS) / 1000 };
    },
  };
}

/**
 * The X-RateLimit headers of a webhook answered before its key's tenant window was read (no key,
 * a refused key or signature, an unknown provider, a body over 4 MiB): the limit that applies to
 * such requests is this guard's, per address. Registered before the body limit, so its 413 gets
 * them too; an answer that already carries the tenant's window keeps it.
 */
export function refusedWebhookWindow(guard: KeyFailureGuard, addressOf: (c: Context<AppEnv>) => string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (c.res.headers.has('X-RateLimit-Limit')) return;
    const { limit, remaining, resetAt } = guard.window(addressOf(c));
    c.res.headers.set('X-RateLimit-Limit', String(limit));
    c.res.headers.set('X-RateLimit-Remaining', String(remaining));
    c.res.headers.set('X-RateLimit-Reset', String(resetAt));
  };
}
