import { createHash, randomBytes } from 'node:crypto';
import { and, eq, gt, sql } from 'drizzle-orm';
import type postgres from 'postgres';
import type { Role } from '../auth/tokens.js';
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { streamTokens } from '../db/schema/remediation.js';

/**
 * How long a stream token opens the stream, by default. It opens it again until then (a browser's
 * EventSource reconnects with the same URL), and a stream opened with it ends then:
 * short, since URLs end up in proxy and browser logs.
 */
export const STREAM_TOKEN_TTL_SECONDS = 300;
const prefix = 'sst_';

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Issues a stream token for the caller, valid `ttlSeconds`; only its SHA-256 hash is stored. */
export async function issueStreamToken(
  db: Db,
  principal: { tenantId: string; userId: string; roles: Role[] },
  now: Date,
  requestId?: string,
  ttlSeconds = STREAM_TOKEN_TTL_SECONDS,
): Promise<{ token: string; expiresAt: Date }> {
  const token = `${prefix}${randomBytes(32).toString('base64url')}`;
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  await db.transaction(async (tx) => {
    await tx.insert(streamTokens).values({
      tokenHash: hashToken(token),
      tenantId: principal.tenantId,
      userId: principal.userId,
      roles: principal.roles,
      expiresAt,
    });
    // A credential was issued: recorded without the token (nor its hash).
    await appendAudit(tx, {
      tenantId: principal.tenantId,
      actorType: 'user',
      actorId: principal.userId,
      action: 'stream_token.issued',
      targetType: 'user',
      targetId: principal.userId,
      requestId: requestId ?? null,
      details: { expiresAt: expiresAt.toISOString() },
    });
  });
  return { token, expiresAt };
}

/**
 * Uses a stream token: valid any number of times until it expires, so a client reconnects with
 * it (ADR 0247); `used_at` keeps its first use. Resolves the principal with the token's
 * expiry, where the stream it opens ends, or undefined for an unknown or expired token (and for
 * anything else, such as an access token put in the URL).
 */
export async function useStreamToken(
  db: Db,
  token: string,
): Promise<{ tenantId: string; userId: string; roles: Role[]; expiresAt: Date } | undefined> {
  if (!token.startsWith(prefix) || token.length > 100) return undefined;
  const [row] = await db
    .update(streamTokens)
    .set({ usedAt: sql`coalesce(${streamTokens.usedAt}, now())` })
    .where(and(eq(streamTokens.tokenHash, hashToken(token)), gt(streamTokens.expiresAt, sql`now()`)))
    .returning({
      tenantId: streamTokens.tenantId,
      userId: streamTokens.userId,
      roles: streamTokens.roles,
      expiresAt: streamTokens.expiresAt,
    });
  if (!row) return undefined;
  return {
    tenantId: row.tenantId,
    userId: row.userId,
    roles: row.roles.filter((r): r is Role => r === 'admin' || r === 'member'),
    expiresAt: row.expiresAt,
  };
}

/**
 * Deletes expired stream tokens, used or not: past its expiry a token can never be accepted, and
 * its issuance is in the audit log. Walks `stream_tokens_expires_idx`. Returns how many.
 */
export async function purgeExpiredStreamTokens(sql: postgres.Sql): Promise<number> {
  const { count } = await sql`delete from stream_tokens where expires_at < now()`;
  return count;
}
