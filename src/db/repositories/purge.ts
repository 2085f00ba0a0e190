import type postgres from 'postgres';

export interface PurgeOptions {
  /** Rows per statement: each statement's locks and WAL stay small beside live traffic. */
  chunkSize?: number;
  /** Checked between statements, so a stopping process does not finish a long backlog first. */
  shouldStop?: () => boolean;
}

/**
 * Deletes the rows of `table` created more than `olderThanMs` ago (and matching `filter`, a
 * fragment without parameters, so that a generic plan still proves a partial index's
 * predicate), oldest first, in statements of `chunkSize` rows, until none is left or
 * `shouldStop` says so. Rows another session has locked are skipped and left for the next
 * purge. Returns how many rows it deleted.
 */
export async function deleteOldestInChunks(
  sql: postgres.Sql,
  table: string,
  olderThanMs: number,
  filter: postgres.PendingQuery<postgres.Row[]> | null,
  options: PurgeOptions = {},
): Promise<number> {
  const chunk = options.chunkSize ?? 5_000;
  const stop = options.shouldStop ?? (() => false);
  let deleted = 0;
  while (!stop()) {
    const { count } = await sql`
      delete from ${sql(table)} where ctid = any(array(
        select ctid from ${sql(table)}
        where ${filter ?? sql`true`} and created_at < now() - make_interval(secs => ${olderThanMs / 1000})
        order by created_at limit ${chunk} for update skip locked))`;
    deleted += count;
    if (count < chunk) break;
  }
  return deleted;
}
