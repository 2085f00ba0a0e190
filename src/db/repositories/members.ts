/**
 * A tenant's members (memberships of user accounts) and its invitations. The last-admin rule is
 * kept by locking the tenant's admin memberships (and the target's) before any change of role or
 * removal, so two admins demoting each other at once cannot both succeed.
 */
import { and, asc, count, desc, eq, gt, isNull, ne, or, sql } from 'drizzle-orm';
import { newId } from '../../ids.js';
import type { Db } from '../client.js';
import { olderThan } from '../keyset.js';
import { invitations, memberships, userAccounts, type MemberRole } from '../schema/identity.js';
import { appendAudit } from './audit.js';

/** How long an invitation stays open. */
export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export interface Member {
  userId: string;
  email: string;
  name: string | null;
  role: MemberRole;
  joinedAt: Date;
}

export type Invitation = typeof invitations.$inferSelect;

type Select = Pick<Db, 'select'>;

const memberColumns = {
  userId: memberships.userId,
  email: userAccounts.email,
  name: userAccounts.name,
  role: memberships.role,
  joinedAt: memberships.createdAt,
};

/** One member of a tenant, or undefined. */
export async function findMember(db: Select, tenantId: string, userId: string): Promise<Member | undefined> {
  const [row] = await db
    .select(memberColumns)
    .from(memberships)
    .innerJoin(userAccounts, eq(userAccounts.id, memberships.userId))
    .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
  return row;
}

/** Whether the (lower-cased) email is already a member of the tenant. */
async function isMemberEmail(db: Select, tenantId: string, email: string): Promise<boolean> {
  const [row] = await db
    .select({ userId: memberships.userId })
    .from(memberships)
    .innerJoin(userAccounts, eq(userAccounts.id, memberships.userId))
    .where(and(eq(memberships.tenantId, tenantId), eq(userAccounts.email, email)));
  return row !== undefined;
}

export type MembersPageRow =
  | { kind: 'member'; id: string; createdAt: Date; member: Member }
  | { kind: 'invitation'; id: string; createdAt: Date; invitation: Invitation };

const newestFirst = (a: MembersPageRow, b: MembersPageRow): number =>
  b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * A page of the tenant's members and open invitations together, newest first: one keyset over
 * (created_at, id) of both, each read with `limit + 1` past the cursor and merged.
 */
export async function listMembersPage(
  db: Select,
  tenantId: string,
  now: Date,
  limit: number,
  after?: { createdAt: Date; id: string },
): Promise<{ rows: MembersPageRow[]; hasMore: boolean }> {
  const [members, open] = await Promise.all([
    db
      .select(memberColumns)
      .from(memberships)
      .innerJoin(userAccounts, eq(userAccounts.id, memberships.userId))
      .where(
        and(
          eq(memberships.tenantId, tenantId),
          after ? olderThan(memberships.createdAt, memberships.userId, after) : undefined,
        ),
      )
      .orderBy(desc(memberships.createdAt), desc(memberships.userId))
      .limit(limit + 1),
    db
      .select()
      .from(invitations)
      .where(
        and(
          eq(invitations.tenantId, tenantId),
          isNull(invitations.acceptedAt),
          gt(invitations.expiresAt, now),
          after ? olderThan(invitations.createdAt, invitations.id, after) : undefined,
        ),
      )
      .orderBy(desc(invitations.createdAt), desc(invitations.id))
      .limit(limit + 1),
  ]);
  const merged: MembersPageRow[] = [
    ...members.map((m) => ({ kind: 'member' as const, id: m.userId, createdAt: m.joinedAt, member: m })),
    ...open.map((i) => ({ kind: 'invitation' as const, id: i.id, createdAt: i.createdAt, invitation: i })),
  ].sort(newestFirst);
  return { rows: merged.slice(0, limit), hasMore: merged.length > limit };
}

export interface Actor {
  type: 'user' | 'system';
  id: string;
  requestId?: string | null;
}

/** Open invitations a tenant may have at once: beyond, invite fewer or withdraw some. */
export const MAX_OPEN_INVITATIONS = 500;

export type InviteOutcome =
  | { outcome: 'invited'; invitation: Invitation; renewed: boolean }
  | { outcome: 'already_member' }
  | { outcome: 'too_many' };

/**
 * Invites an email (lower-cased) to the tenant, or renews its open invitation (same id, new
 * role, inviter and expiry): one open invitation per tenant and email, at most
 * MAX_OPEN_INVITATIONS of them.
 */
export async function inviteMember(
  db: Db,
  args: { tenantId: string; email: string; role: MemberRole; actor: Actor; now: Date },
): Promise<InviteOutcome> {
  const { tenantId, email, role, actor, now } = args;
  return db.transaction(async (tx) => {
    if (await isMemberEmail(tx, tenantId, email)) return { outcome: 'already_member' as const };
    // Serialise invitations per tenant so the bound holds under concurrent requests.
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`invitations:${tenantId}`}))`);
    const [others] = await tx
      .select({ n: count() })
      .from(invitations)
      .where(
        and(
          eq(invitations.tenantId, tenantId),
          isNull(invitations.acceptedAt),
          gt(invitations.expiresAt, now),
          ne(invitations.email, email),
        ),
      );
    if ((others?.n ?? 0) >= MAX_OPEN_INVITATIONS) return { outcome: 'too_many' as const };
    const id = newId('inv');
    const expiresAt = new Date(now.getTime() + INVITATION_TTL_MS);
    const [invitation] = await tx
      .insert(invitations)
      .values({ id, tenantId, email, role, invitedBy: actor.id, createdAt: now, expiresAt })
      .onConflictDoUpdate({
        target: [invitations.tenantId, invitations.email],
        targetWhere: isNull(invitations.acceptedAt),
        set: { role, invitedBy: actor.id, createdAt: now, expiresAt },
      })
      .returning();
    const renewed = invitation!.id !== id;
    await appendAudit(tx, {
      tenantId,
      actorType: actor.type,
      actorId: actor.id,
      action: 'member.invited',
      targetType: 'invitation',
      targetId: invitation!.id,
      requestId: actor.requestId ?? null,
      details: { email, role, renewed, expiresAt: expiresAt.toISOString() },
    });
    return { outcome: 'invited' as const, invitation: invitation!, renewed };
  });
}

/** Withdraws an open invitation of the tenant (deletes it); null when there is none by that id. */
export async function withdrawInvitation(
  db: Db,
  args: { tenantId: string; invitationId: string; actor: Actor },
): Promise<Invitation | null> {
  const { tenantId, invitationId, actor } = args;
  return db.transaction(async (tx) => {
    const [gone] = await tx
      .delete(invitations)
      .where(and(eq(invitations.id, invitationId), eq(invitations.tenantId, tenantId), isNull(invitations.acceptedAt)))
      .returning();
    if (!gone) return null;
    await appendAudit(tx, {
      tenantId,
      actorType: actor.type,
      actorId: actor.id,
      action: 'member.invitation_withdrawn',
      targetType: 'invitation',
      targetId: gone.id,
      requestId: actor.requestId ?? null,
      details: { email: gone.email, role: gone.role },
    });
    return gone;
  });
}

/**
 * Locks the tenant's admin memberships and the target's, in user id order (two such
 * transactions never deadlock); a transaction blocked here re-reads the rows after the other
 * commits, so an admin demoted meanwhile is no longer counted. The target's current role (or
 * undefined when they are no member) and how many admins there are.
 */
export async function lockAdmins(
  tx: Select,
  tenantId: string,
  userId: string,
): Promise<{ role: MemberRole | undefined; admins: number }> {
  const rows = await tx
    .select({ userId: memberships.userId, role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.tenantId, tenantId), or(eq(memberships.role, 'admin'), eq(memberships.userId, userId))))
    .orderBy(asc(memberships.userId))
    .for('update');
  return {
    role: rows.find((r) => r.userId === userId)?.role,
    admins: rows.filter((r) => r.role === 'admin').length,
  };
}

/** Would this change leave the tenant without an admin? */
export const leavesNoAdmin = (current: MemberRole, next: MemberRole | 'removed', admins: number): boolean =>
  current === 'admin' && next !== 'admin' && admins <= 1;

export async function setMemberRole(
  tx: Pick<Db, 'update'>,
  tenantId: string,
  userId: string,
  role: MemberRole,
  now: Date,
): Promise<void> {
  await tx
    .update(memberships)
    .set({ role, updatedAt: now })
    .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
}

export async function deleteMembership(tx: Pick<Db, 'delete'>, tenantId: string, userId: string): Promise<void> {
  await tx.delete(memberships).where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
}

/**
 * What the operator CLI does: the user account of the (lower-cased) email, made or reused, and
 * its membership of the tenant with the role, audited as the operator's. An existing member takes
 * the new role, unless that would leave the tenant without an admin. Null when the tenant does
 * not exist.
 */
export async function addMemberByOperator(
  db: Db,
  args: { tenantId: string; email: string; role: MemberRole; name?: string; now: Date },
): Promise<{ userId: string; before: MemberRole | undefined } | 'last_admin' | null> {
  const { tenantId, email, role, name, now } = args;
  return db.transaction(async (tx) => {
    const tenant = await tx.execute<{ id: string }>(sql`select id from tenants where id = ${tenantId} for share`);
    if (tenant.length === 0) return null;
    const [account] = await tx
      .insert(userAccounts)
      .values({ id: newId('usr'), email, name: name ?? null, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({
        target: userAccounts.email,
        // A name given replaces the account's; without one the stored name stays.
        set: name ? { name, updatedAt: now } : { updatedAt: sql`${userAccounts.updatedAt}` },
      })
      .returning({ id: userAccounts.id });
    const userId = account!.id;
    const { role: before, admins } = await lockAdmins(tx, tenantId, userId);
    if (before && leavesNoAdmin(before, role, admins)) return 'last_admin' as const;
    if (before === role) return { userId, before };
    await tx
      .insert(memberships)
      .values({ tenantId, userId, role, addedBy: 'operator', createdAt: now, updatedAt: now })
      .onConflictDoUpdate({ target: [memberships.tenantId, memberships.userId], set: { role, updatedAt: now } });
    await appendAudit(tx, {
      tenantId,
      actorType: 'system',
      actorId: 'operator',
      action: before ? 'member.role_changed' : 'member.added',
      targetType: 'member',
      targetId: userId,
      details: before ? { email, from: before, to: role } : { email, role, addedBy: 'operator' },
    });
    return { userId, before };
  });
}

/** Every member of a tenant, oldest first (the CLI's `member list`). */
export async function listAllMembers(db: Select, tenantId: string): Promise<Member[]> {
  return db
    .select(memberColumns)
    .from(memberships)
    .innerJoin(userAccounts, eq(userAccounts.id, memberships.userId))
    .where(eq(memberships.tenantId, tenantId))
    .orderBy(asc(memberships.createdAt), asc(memberships.userId));
}
