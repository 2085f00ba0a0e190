import type { MiddlewareHandler } from 'hono';
import type { Principal } from '../../auth/tokens.js';
import { users } from '../../db/schema/remediation.js';
import { failureReason, isDependencyUnavailable, isStatementTimeout } from '../../dependency-failures.js';
import type { AppDeps, AppEnv } from '../context.js';

type RecorderLog = { error: (obj: object, msg: string) => void; warn: (obj: object, msg: string) => void };

/** An outage's failures are expected and many: a warning in one line; anything else is a bug. */
function logFailure(log: RecorderLog, err: unknown, p: Principal): void {
  if (isDependencyUnavailable(err) || isStatementTimeout(err))
    log.warn(
      { reason: failureReason(err), tenantId: p.tenantId, userId: p.userId },
      'recording the user failed: database unavailable',
    );
  else log.error({ err, tenantId: p.tenantId, userId: p.userId }, 'recording the user failed');
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
      .values({
        tenantId: p.tenantId,
        userId: p.userId,
        email: p.email ?? null,
        roles: p.roles,
        firstSeenAt: now,
        lastSeenAt: now,
      })
      .onConflictDoUpdate({
        target: [users.tenantId, users.userId],
        set: { email: p.email ?? null, roles: p.roles, lastSeenAt: now },
      });
  return async (p: Principal, log: RecorderLog): Promise<void> => {
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
        logFailure(log, err, p);
      }
      return;
    }
    write(p, now).catch((err: unknown) => logFailure(log, err, p));
  };
}

/**
 * Records an admitted caller in `users`. A stream token carries no email; its user was recorded
 * when the token was issued.
 */
export function recordUser(deps: Pick<AppDeps, 'db' | 'clock'>): MiddlewareHandler<AppEnv> {
  const record = createUserRecorder(deps);
  return async (c, next) => {
    const { principal, by } = c.var.identified!;
    if (by !== 'stream-token') await record(principal, c.var.logger);
    return next();
  };
}
