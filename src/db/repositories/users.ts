import { and, gt, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client.js';
import { memberships } from '../schema/identity.js';
import { users } from '../schema/remediation.js';

/**
 * A person is notified while the api has seen them within this window: a
 * person who left, or a token subject used once, stops receiving notifications nobody reads.
 * Longer than the notifications' own retention (30 days), so someone back from a long leave
 * finds what the last month left them, and is notified again from their first request.
 * Members (memberships) are notified whether or not the api has seen them.
 */
export const ACTIVE_USER_WINDOW_MS = 90 * 24 * 60 * 60 * 1000;

/** `where`, narrowed to the users the api has seen within the window. */
export function activeUsers(where: SQL): SQL {
  return and(where, gt(users.lastSeenAt, sql`now() - make_interval(secs => ${ACTIVE_USER_WINDOW_MS / 1000})`))!;
}

/** One of a tenant's people, with the roles notifications go by. */
export interface TenantPerson {
  tenantId: string;
  userId: string;
  roles: string[];
}

/** A person the service signs in (`usr_…`): a member, or no longer one of that tenant. */
const SIGNED_IN_USER = /^usr_[0-9a-z]{26}$/;

/**
 * The tenants' people, once each: every member by membership (its role), whether or not they
 * ever called the api, and every token subject the api has seen within the window (the roles of
 * their token). A membership's role wins over a seen token's; a signed-in user seen but no
 * longer a member is nobody's (their requests are refused too).
 */
export async function tenantPeople(db: Pick<Db, 'select'>, tenantIds: string[]): Promise<TenantPerson[]> {
  if (tenantIds.length === 0) return [];
  const [members, seen] = await Promise.all([
    db
      .select({ tenantId: memberships.tenantId, userId: memberships.userId, role: memberships.role })
      .from(memberships)
      .where(inArray(memberships.tenantId, tenantIds)),
    db
      .select({ tenantId: users.tenantId, userId: users.userId, roles: users.roles })
      .from(users)
      .where(activeUsers(inArray(users.tenantId, tenantIds))),
  ]);
  const people = new Map<string, TenantPerson>();
  for (const person of seen) {
    if (SIGNED_IN_USER.test(person.userId)) continue;
    people.set(`${person.tenantId}\0${person.userId}`, person);
  }
  for (const m of members) {
    people.set(`${m.tenantId}\0${m.userId}`, { tenantId: m.tenantId, userId: m.userId, roles: [m.role] });
  }
  return [...people.values()];
}
