import { and, eq } from 'drizzle-orm';
import type { Db } from '../client.js';
import { memberships, userAccounts, type MemberRole } from '../schema/identity.js';

/** A person's role in a tenant, and their email; null when they are not a member. */
export async function membershipOf(
  db: Pick<Db, 'select'>,
  tenantId: string,
  userId: string,
): Promise<{ role: MemberRole; email: string } | null> {
  const [row] = await db
    .select({ role: memberships.role, email: userAccounts.email })
    .from(memberships)
    .innerJoin(userAccounts, eq(userAccounts.id, memberships.userId))
    .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
  return row ?? null;
}
