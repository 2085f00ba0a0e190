import { createHash, randomBytes } from 'node:crypto';
import { and, eq, gt, isNull } from 'drizzle-orm';
import type { Db } from '../client.js';
import { oauthStates } from '../schema/identity.js';

/** How long an authorization may take at the provider (login, consent) before its callback is refused. */
export const OAUTH_STATE_TTL_MS = 10 * 60 * 1000;

type Purpose = (typeof oauthStates.$inferSelect)['purpose'];

export interface OAuthStateRecord {
  provider: string;
  tenantId: string | null;
  userId: string | null;
  data: Record<string, unknown>;
}

const hashOf = (state: string) => createHash('sha256').update(state, 'utf8').digest('hex');

/** Stores an authorization in flight; returns its `state` (256 random bits), known only to the browser. */
export async function createOAuthState(
  db: Pick<Db, 'insert'>,
  purpose: Purpose,
  record: OAuthStateRecord,
  now: Date,
  ttlMs: number = OAUTH_STATE_TTL_MS,
): Promise<string> {
  const state = randomBytes(32).toString('base64url');
  await db.insert(oauthStates).values({
    stateHash: hashOf(state),
    purpose,
    provider: record.provider,
    tenantId: record.tenantId,
    userId: record.userId,
    data: record.data,
    createdAt: now,
    expiresAt: new Date(now.getTime() + ttlMs),
  });
  return state;
}

/**
 * Uses a `state` once: the record when it was issued for this purpose and provider, has not
 * expired and was not used before; null otherwise (so a replayed callback is refused here).
 */
export async function consumeOAuthState(
  db: Pick<Db, 'update'>,
  purpose: Purpose,
  provider: string,
  state: string,
  now: Date,
): Promise<OAuthStateRecord | null> {
  const [row] = await db
    .update(oauthStates)
    .set({ consumedAt: now })
    .where(
      and(
        eq(oauthStates.stateHash, hashOf(state)),
        eq(oauthStates.purpose, purpose),
        eq(oauthStates.provider, provider),
        isNull(oauthStates.consumedAt),
        gt(oauthStates.expiresAt, now),
      ),
    )
    .returning();
  return row ? { provider: row.provider, tenantId: row.tenantId, userId: row.userId, data: row.data } : null;
}
