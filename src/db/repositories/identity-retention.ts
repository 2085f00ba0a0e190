import type postgres from 'postgres';
import { deleteOldestInChunks, type PurgeOptions } from './purge.js';

/** An OAuth state is kept an hour past its expiry: a late callback is told it expired, not that it is unknown. */
export const OAUTH_STATE_KEPT_MS = 60 * 60 * 1000;
/**
 * A refresh token is kept a week past its expiry: until then a rotated one presented again
 * still revokes its family; later it is refused as unknown, which it would be as expired too.
 */
export const REFRESH_TOKEN_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

/** Purges expired OAuth states and refresh tokens (housekeeping). */
export async function purgeIdentityRows(
  sql: postgres.Sql,
  options: PurgeOptions = {},
): Promise<{ oauthStates: number; refreshTokens: number }> {
  return {
    oauthStates: await deleteOldestInChunks(sql, 'oauth_states', OAUTH_STATE_KEPT_MS, null, {
      ...options,
      age: 'expires_at',
    }),
    refreshTokens: await deleteOldestInChunks(sql, 'refresh_tokens', REFRESH_TOKEN_KEPT_MS, null, {
      ...options,
      age: 'expires_at',
    }),
  };
}
