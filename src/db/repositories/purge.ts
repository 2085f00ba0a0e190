import type postgres from 'postgres';

export interface PurgeOptions {
  /** Rows per statement: each statement's locks and WAL stay small beside live traffic. */
  chunkSize?: number;
  /** Checked between statements, so a stopping process does not finish a long backlog first. */
  shouldStop?: () => boolean;
}

/** The timestamp a row's age is read from: when it was written, when it last changed, or when it expired. */
type AgeColumn = 'created_at' | 'updated_at' | 'expires_at';

/**
 * Deletes the rows of `table` whose `age` column (`created_at` unless given) is more than
 * `olderThanMs` ago (and matching `filter`, a fragment without parameters, so that a generic
 * plan still proves a partial index's predicate), oldest first, in statements of `chunkSize`
 * rows, until none is left or `shouldStop` says so. Rows another session has locked are skipped
 * and left for the next purge. Returns how many rows it deleted.
 */
export async function deleteOldestInChunks(
  sql: postgres.Sql,
  table: string,
  olderThanMs: number,
  filter: postgres.PendingQuery<postgres.Row[]> | null,
  options: PurgeOptions & { age?: AgeColumn } = {},
): Promise<number> {
  const age = sql(options.age ?? 'created_at');
  const chunk = options.chunkSize ?? 5_000;
  const stop = options.shouldStop ?? (() => false);
  let deleted = 0;
  while (!stop()) {
    const { count } = await sql`
      delete from ${sql(table)} where ctid = any(array(
        select ctid from ${sql(table)}
        where ${filter ?? sql`true`} and ${age} < now() - make_interval(secs => ${olderThanMs / 1000})
        order by ${age} limit ${chunk} for update skip locked))`;
    deleted += count;
    if (count < chunk) break;
  }
  return deleted;
}
