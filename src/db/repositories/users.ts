import { and, gt, sql, type SQL } from 'drizzle-orm';
import { users } from '../schema/remediation.js';

/**
 * A person is notified while the api has seen them within this window: a
 * person who left, or a token subject used once, stops receiving notifications nobody reads.
 * Longer than the notifications' own retention (30 days), so someone back from a long leave
 * finds what the last month left them, and is notified again from their first request.
 */
export const ACTIVE_USER_WINDOW_MS = 90 * 24 * 60 * 60 * 1000;

/** `where`, narrowed to the users the api has seen within the window. */
export function activeUsers(where: SQL): SQL {
  return and(where, gt(users.lastSeenAt, sql`now() - make_interval(secs => ${ACTIVE_USER_WINDOW_MS / 1000})`))!;
}
