/**
 * The end of a sign-in, once a provider vouched for a verified email: the account (found, linked
 * or made), the invitations to that email accepted, the tenant chosen, the session started and
 * `auth.signed_in` audited, in one transaction.
 */
import type { Db } from '../../db/client.js';
import { appendAudit } from '../../db/repositories/audit.js';
import {
  acceptInvitations,
  findOrCreateAccount,
  membershipsOfAccount,
  type AccountMembership,
  type VerifiedIdentity,
} from '../../db/repositories/identities.js';
import { AppError } from '../../errors.js';
import { startSession, type SessionSettings, type TokenPair } from '../sessions.js';

export interface SignedIn {
  userId: string;
  pair: TokenPair;
}

type Choice = { chosen: AccountMembership } | { choices: AccountMembership[] };

/** The tenant the session is for: the one asked for, or the only one; several → the person chooses. */
function chooseTenant(list: AccountMembership[], requested: string | null): Choice {
  if (list.length === 0) {
    throw new AppError('no_membership', 'You are not a member of any tenant; ask an admin to invite your email');
  }
  if (requested !== null) {
    const asked = list.find((m) => m.tenantId === requested);
    if (!asked) throw new AppError('no_membership', `You are not a member of tenant ${requested}`);
    if (asked.suspended) throw new AppError('forbidden', 'This tenant is suspended');
    return { chosen: asked };
  }
  const active = list.filter((m) => !m.suspended);
  if (active.length === 0) throw new AppError('forbidden', 'This tenant is suspended');
  return active.length === 1 ? { chosen: active[0]! } : { choices: active };
}

/**
 * Signs a person in. A person with several tenants and none chosen gets 400
 * `tenant_choice_required` listing them; what they proved (account, invitations) is kept.
 */
export async function completeSignIn(
  db: Db,
  sessions: SessionSettings,
  identity: VerifiedIdentity,
  requestedTenant: string | null,
  now: Date,
  requestId: string | null,
): Promise<SignedIn> {
  const outcome = await db.transaction(async (tx) => {
    const account = await findOrCreateAccount(tx, identity, now);
    await acceptInvitations(tx, account, identity.email, now, requestId);
    const choice = chooseTenant(await membershipsOfAccount(tx, account.userId), requestedTenant);
    if ('choices' in choice) return choice;
    const { tenantId, role } = choice.chosen;
    const pair = await startSession(
      tx,
      sessions,
      { userId: account.userId, tenantId, email: account.email, role },
      now,
    );
    await appendAudit(tx, {
      tenantId,
      actorType: 'user',
      actorId: account.userId,
      action: 'auth.signed_in',
      targetType: 'user',
      targetId: account.userId,
      requestId,
      details: { provider: identity.provider, role },
    });
    return { signedIn: { userId: account.userId, pair } };
  });
  if ('choices' in outcome) {
    throw new AppError(
      'tenant_choice_required',
      'You are a member of several tenants: sign in again with tenant=<tenantId> of one of them',
      { tenants: outcome.choices.map(({ tenantId, name, role }) => ({ tenantId, name, role })) },
    );
  }
  return outcome.signedIn;
}
