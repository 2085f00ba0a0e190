/**
 * People and how they sign in: one account per verified email (lower-cased), whichever provider
 * vouches for it; each provider's subject linked to it; invitations to that email accepted.
 */
import { normalEmail } from '../../domain/email.js';
import { and, asc, eq, gt, isNull } from 'drizzle-orm';
import type { Db } from '../client.js';
import { appendAudit } from './audit.js';
import { invitations, memberships, userAccounts, userIdentities, type MemberRole } from '../schema/identity.js';
import type { SignInProvider } from '../schema/identity.js';
import { tenants } from '../schema/tenants.js';
import { newId } from '../../ids.js';

type Tx = Pick<Db, 'select' | 'insert' | 'update'>;

export interface VerifiedIdentity {
  provider: SignInProvider;
  subject: string;
  /** Verified by the provider. */
  email: string;
  name: string | null;
}

export interface Account {
  userId: string;
  /** The account's email (lower-cased): the one tokens carry. */
  email: string;
}

async function accountById(tx: Tx, userId: string): Promise<Account> {
  const [row] = await tx
    .select({ userId: userAccounts.id, email: userAccounts.email })
    .from(userAccounts)
    .where(eq(userAccounts.id, userId));
  return row!;
}

async function accountByEmail(tx: Tx, email: string): Promise<Account | undefined> {
  const [row] = await tx
    .select({ userId: userAccounts.id, email: userAccounts.email })
    .from(userAccounts)
    .where(eq(userAccounts.email, email));
  return row;
}

/**
 * The account of a person who just signed in: the one their (provider, subject) is linked to
 * (even when the provider now reports another email), else the one of their verified email
 * (linking this provider to it), else a new one. Safe against a concurrent first sign-in.
 */
export async function findOrCreateAccount(tx: Tx, identity: VerifiedIdentity, now: Date): Promise<Account> {
  const email = normalEmail(identity.email);
  const [linked] = await tx
    .select({ userId: userIdentities.userId })
    .from(userIdentities)
    .where(and(eq(userIdentities.provider, identity.provider), eq(userIdentities.subject, identity.subject)));
  if (linked) {
    await tx
      .update(userIdentities)
      .set({ email, lastSignInAt: now })
      .where(and(eq(userIdentities.provider, identity.provider), eq(userIdentities.subject, identity.subject)));
    return accountById(tx, linked.userId);
  }
  let account = await accountByEmail(tx, email);
  if (!account) {
    await tx
      .insert(userAccounts)
      .values({ id: newId('usr'), email, name: identity.name, createdAt: now, updatedAt: now })
      .onConflictDoNothing({ target: userAccounts.email });
    account = (await accountByEmail(tx, email))!;
  }
  await tx
    .insert(userIdentities)
    .values({
      provider: identity.provider,
      subject: identity.subject,
      userId: account.userId,
      email,
      createdAt: now,
      lastSignInAt: now,
    })
    .onConflictDoNothing();
  // A concurrent sign-in of the same subject may have linked it first: its link wins.
  const [winner] = await tx
    .select({ userId: userIdentities.userId })
    .from(userIdentities)
    .where(and(eq(userIdentities.provider, identity.provider), eq(userIdentities.subject, identity.subject)));
  return winner!.userId === account.userId ? account : accountById(tx, winner!.userId);
}

export interface AcceptedInvitation {
  invitationId: string;
  tenantId: string;
  role: MemberRole;
}

/**
 * Accepts every open, unexpired invitation of `email`: a membership with the invitation's role
 * (an existing membership keeps its role), the invitation marked accepted, `member.joined` audited.
 */
export async function acceptInvitations(
  tx: Tx,
  account: Account,
  email: string,
  now: Date,
  requestId: string | null,
): Promise<AcceptedInvitation[]> {
  const open = await tx
    .select({ id: invitations.id, tenantId: invitations.tenantId, role: invitations.role })
    .from(invitations)
    .where(
      and(eq(invitations.email, normalEmail(email)), isNull(invitations.acceptedAt), gt(invitations.expiresAt, now)),
    )
    .orderBy(asc(invitations.createdAt))
    .for('update');
  const accepted: AcceptedInvitation[] = [];
  for (const invitation of open) {
    const joined = await tx
      .insert(memberships)
      .values({
        tenantId: invitation.tenantId,
        userId: account.userId,
        role: invitation.role,
        addedBy: `invitation:${invitation.id}`,
        createdAt: now,
        updatedAt: now,
      })
      .onConflictDoNothing()
      .returning({ role: memberships.role });
    await tx
      .update(invitations)
      .set({ acceptedAt: now, acceptedBy: account.userId })
      .where(eq(invitations.id, invitation.id));
    if (joined.length === 0) continue;
    await appendAudit(tx, {
      tenantId: invitation.tenantId,
      actorType: 'user',
      actorId: account.userId,
      action: 'member.joined',
      targetType: 'member',
      targetId: account.userId,
      requestId,
      details: { invitationId: invitation.id, role: invitation.role, email: account.email },
    });
    accepted.push({ invitationId: invitation.id, tenantId: invitation.tenantId, role: invitation.role });
  }
  return accepted;
}

export interface AccountMembership {
  tenantId: string;
  name: string;
  role: MemberRole;
  suspended: boolean;
}

/** Every tenant a person is a member of, oldest membership first. */
export async function membershipsOfAccount(tx: Pick<Db, 'select'>, userId: string): Promise<AccountMembership[]> {
  const rows = await tx
    .select({ tenantId: memberships.tenantId, name: tenants.name, role: memberships.role, status: tenants.status })
    .from(memberships)
    .innerJoin(tenants, eq(tenants.id, memberships.tenantId))
    .where(eq(memberships.userId, userId))
    .orderBy(asc(memberships.createdAt), asc(memberships.tenantId));
  return rows.map((r) => ({ tenantId: r.tenantId, name: r.name, role: r.role, suspended: r.status !== 'active' }));
}
