import type postgres from 'postgres';

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the window resets. */
  resetAt: number;
}

/**
 * Counts a request in the bucket's fixed one-minute window, held in PostgreSQL so that every
 * api process agrees. One round trip.
 */
export async function countRequest(sql: postgres.Sql, bucket: string, limit: number): Promise<RateLimitResult> {
  const rows = await sql<{ count: number; reset: string }[]>`
    insert into rate_limit_windows (bucket, window_start, count)
    values (${bucket}, date_trunc('minute', now()), 1)
    on conflict (bucket, window_start) do update set count = rate_limit_windows.count + 1
    returning count, extract(epoch from window_start)::bigint + 60 as reset`;
  const row = rows[0]!;
  return {
    allowed: row.count <= limit,
    limit,
    remaining: Math.max(0, limit - row.count),
    resetAt: Number(row.reset),
  };
}

/** Deletes windows that ended more than a few minutes ago. */
export async function purgeRateLimitWindows(sql: postgres.Sql): Promise<number> {
  const result = await sql`delete from rate_limit_windows where window_start < now() - interval '5 minutes'`;
  return result.count;
}
