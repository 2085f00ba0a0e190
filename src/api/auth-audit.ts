import type { Context } from 'hono';
import type { Logger } from 'pino';
import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import type { ActorType } from '../db/schema/audit.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import type { AppEnv } from './context.js';

export interface AuthFailure {
  tenantId: string;
  actorType: ActorType;
  actorId: string;
  action: 'auth.forbidden' | 'auth.webhook_rejected';
  details: Record<string, unknown>;
}

const WEBHOOK_PATH = /^\/v1\/webhooks\/([^/]+)\/[^/]+\/?$/;

/**
 * The authentication failures worth keeping: those attributable to a tenant. A webhook refused
 * for its API key or signature (the tenant is in the path; the key id when the key itself was
 * valid), and a verified user refused for their role. A token that does not verify names no
 * tenant we can trust, so it is only logged: otherwise anyone could write into any tenant's log.
 */
export function authFailureOf(err: unknown, c: Context<AppEnv>, clientAddress: string): AuthFailure | null {
  if (!(err instanceof AppError)) return null;
  const base = { method: c.req.method, path: c.req.path, reason: err.message, clientAddress };
  const auth = c.get('auth');
  if (err.code === 'forbidden' && auth) {
    return {
      tenantId: auth.tenantId,
      actorType: 'user',
      actorId: auth.userId,
      action: 'auth.forbidden',
      details: base,
    };
  }
  const webhook = err.code === 'unauthorized' ? WEBHOOK_PATH.exec(c.req.path) : null;
  if (webhook?.[1]) {
    return {
      tenantId: webhook[1],
      actorType: 'api_key',
      actorId: c.get('apiKeyId') ?? 'unknown',
      action: 'auth.webhook_rejected',
      details: base,
    };
  }
  return null;
}

/** How often one kind of failure (tenant, action, actor) is written per process; the rest are counted. */
export const AUTH_FAILURE_AUDIT_INTERVAL_MS = 10_000;
const MAX_TRACKED = 10_000;

/**
 * Writes authentication failures to the tenant's audit log, at most one per kind per interval
 * per process (the next entry says how many were suppressed), so a flood of bad requests cannot
 * flood the log. A failure to write is logged, never turned into a different response.
 */
export function createAuthFailureAuditor(
  deps: { db: Db; clock: () => Date; logger: Logger },
  intervalMs = AUTH_FAILURE_AUDIT_INTERVAL_MS,
) {
  const last = new Map<string, { at: number; suppressed: number }>();
  return async (failure: AuthFailure, requestId: string | undefined): Promise<void> => {
    const key = `${failure.tenantId}\0${failure.action}\0${failure.actorId}`;
    const now = deps.clock().getTime();
    const seen = last.get(key);
    if (seen && now - seen.at < intervalMs) {
      seen.suppressed++;
      return;
    }
    if (last.size >= MAX_TRACKED) last.clear();
    last.set(key, { at: now, suppressed: 0 });
    const details = { ...failure.details, ...(seen?.suppressed ? { suppressedSincePrevious: seen.suppressed } : {}) };
    try {
      // The tenant id of a webhook path is the caller's claim: an unknown one writes nothing.
      await deps.db.execute(sql`
        insert into audit_log (id, tenant_id, actor_type, actor_id, action, target_type, target_id, request_id, details)
        select ${newId('aud')}, t.id, ${failure.actorType}, ${failure.actorId}, ${failure.action}, 'tenant', t.id, ${requestId ?? null}, ${JSON.stringify(details)}::jsonb
        from tenants t where t.id = ${failure.tenantId}`);
    } catch (err) {
      deps.logger.error(
        { err, tenantId: failure.tenantId, action: failure.action },
        'recording an authentication failure failed',
      );
    }
  };
}
