/**
 * The tokens the service issues to a signed-in person: a short-lived access JWT (the
 * interface's claims) and an opaque refresh token, stored only as its SHA-256, rotated on every
 * use; a rotated one presented again revokes its whole family (ADR 0273).
 */
import { createHash, randomBytes } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import { base62 } from './api-keys.js';
import { signToken } from './tokens.js';
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { membershipOf } from '../db/repositories/memberships.js';
import { refreshTokens, type MemberRole } from '../db/schema/identity.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';

export const REFRESH_TOKEN_PREFIX = 'frt_';

export interface SessionSettings {
  /** The HS256 secret access tokens are signed with. */
  signingSecret: string;
  accessTtlSeconds: number;
  refreshTtlSeconds: number;
}

/** What sign-in and refresh answer. */
export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
  tenantId: string;
}

export interface SessionMember {
  userId: string;
  tenantId: string;
  email: string;
  role: MemberRole;
}

const hashOf = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/** Signs the access token of a member. */
function accessTokenOf(settings: SessionSettings, member: SessionMember): string {
  return signToken({
    secret: settings.signingSecret,
    tenantId: member.tenantId,
    role: member.role,
    sub: member.userId,
    email: member.email,
    ttlSeconds: settings.accessTtlSeconds,
  });
}

async function newRefreshToken(
  tx: Pick<Db, 'insert'>,
  settings: SessionSettings,
  member: SessionMember,
  familyId: string,
  now: Date,
): Promise<string> {
  const token = `${REFRESH_TOKEN_PREFIX}${base62(randomBytes(32))}`;
  await tx.insert(refreshTokens).values({
    id: newId('rtk'),
    familyId,
    tokenHash: hashOf(token),
    userId: member.userId,
    tenantId: member.tenantId,
    createdAt: now,
    expiresAt: new Date(now.getTime() + settings.refreshTtlSeconds * 1000),
  });
  return token;
}

const pairOf = (settings: SessionSettings, member: SessionMember, refreshToken: string): TokenPair => ({
  accessToken: accessTokenOf(settings, member),
  refreshToken,
  tokenType: 'Bearer',
  expiresIn: settings.accessTtlSeconds,
  tenantId: member.tenantId,
});

/** Starts a session (a new refresh token family) for a member who just signed in. */
export async function startSession(
  tx: Pick<Db, 'insert'>,
  settings: SessionSettings,
  member: SessionMember,
  now: Date,
): Promise<TokenPair> {
  return pairOf(settings, member, await newRefreshToken(tx, settings, member, newId('rtk'), now));
}

const REFUSED = 'The refresh token is invalid, expired or revoked; sign in again';

async function revokeFamily(tx: Pick<Db, 'update'>, familyId: string, reason: string, now: Date): Promise<void> {
  await tx
    .update(refreshTokens)
    .set({ revokedAt: now, revokedReason: reason })
    .where(and(eq(refreshTokens.familyId, familyId), isNull(refreshTokens.revokedAt)));
}

/**
 * Exchanges a refresh token for a new pair, with the member's role as it is now. A token used
 * before revokes its family (someone else holds a copy); a removed member's is refused. Every
 * refusal is a 401; the revocation commits before it is thrown.
 */
export async function refreshSession(
  db: Db,
  settings: SessionSettings,
  refreshToken: string,
  now: Date,
  requestId?: string,
): Promise<TokenPair> {
  const outcome = await db.transaction(async (tx) => {
    const [row] = await tx
      .select()
      .from(refreshTokens)
      .where(eq(refreshTokens.tokenHash, hashOf(refreshToken)))
      .for('update');
    if (!row || row.revokedAt) return { refused: true as const };
    const audit = (action: string, details: Record<string, unknown> = {}) =>
      appendAudit(tx, {
        tenantId: row.tenantId,
        actorType: 'user',
        actorId: row.userId,
        action,
        targetType: 'session',
        targetId: row.familyId,
        requestId: requestId ?? null,
        details,
      });
    if (row.rotatedAt) {
      await revokeFamily(tx, row.familyId, 'reuse', now);
      await audit('auth.refresh_token_reused', { rotatedAt: row.rotatedAt.toISOString() });
      return { refused: true as const };
    }
    if (row.expiresAt <= now) return { refused: true as const };
    const membership = await membershipOf(tx, row.tenantId, row.userId);
    if (!membership) {
      await revokeFamily(tx, row.familyId, 'member_removed', now);
      return { refused: true as const };
    }
    await tx.update(refreshTokens).set({ rotatedAt: now }).where(eq(refreshTokens.id, row.id));
    const member = { userId: row.userId, tenantId: row.tenantId, email: membership.email, role: membership.role };
    const next = await newRefreshToken(tx, settings, member, row.familyId, now);
    await audit('auth.token_refreshed', { role: membership.role });
    return { refused: false as const, pair: pairOf(settings, member, next) };
  });
  if (outcome.refused) throw new AppError('unauthorized', REFUSED);
  return outcome.pair;
}

/**
 * Ends the session a refresh token belongs to (its whole family). Unknown or already revoked
 * tokens are answered the same way (RFC 7009): the caller learns nothing from logout.
 */
export async function endSession(db: Db, refreshToken: string, now: Date, requestId?: string): Promise<void> {
  await db.transaction(async (tx) => {
    const [row] = await tx
      .select({ familyId: refreshTokens.familyId, tenantId: refreshTokens.tenantId, userId: refreshTokens.userId })
      .from(refreshTokens)
      .where(and(eq(refreshTokens.tokenHash, hashOf(refreshToken)), isNull(refreshTokens.revokedAt)));
    if (!row) return;
    await revokeFamily(tx, row.familyId, 'logout', now);
    await appendAudit(tx, {
      tenantId: row.tenantId,
      actorType: 'user',
      actorId: row.userId,
      action: 'auth.logged_out',
      targetType: 'session',
      targetId: row.familyId,
      requestId: requestId ?? null,
    });
  });
}

/** Revokes every refresh token of a member of a tenant (removed from it): at once. */
export async function revokeMemberSessions(
  tx: Pick<Db, 'update'>,
  tenantId: string,
  userId: string,
  now: Date,
  reason = 'member_removed',
): Promise<void> {
  await tx
    .update(refreshTokens)
    .set({ revokedAt: now, revokedReason: reason })
    .where(
      and(eq(refreshTokens.tenantId, tenantId), eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt)),
    );
}
