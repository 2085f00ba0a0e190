import type postgres from 'postgres';

export interface DeliveryRetention {
  /** A body-hash key is answered only this long (the replay window), then it is deleted. */
  bodyWindowMs: number;
  /** A tool's delivery id is answered this long, then it is deleted. */
  idRetentionMs: number;
}

export interface PurgeOptions {
  /** Rows per statement: each statement's locks and WAL stay small beside live ingestion. */
  chunkSize?: number;
  /** Checked between statements, so a stopping process does not finish a long backlog first. */
  shouldStop?: () => boolean;
}

/**
 * Deletes the delivery records no retry can be answered from any more, oldest first, in
 * statements of `chunkSize` rows, until none is left or `shouldStop` says so. Each kind of key
 * walks its own partial index (migration 0013). Rows a concurrent batch has locked are skipped
 * and left for the next purge. Returns how many rows it deleted.
 */
export async function purgeWebhookDeliveries(sql: postgres.Sql, retention: DeliveryRetention, options: PurgeOptions = {}): Promise<number> {
  const chunk = options.chunkSize ?? 5_000;
  const stop = options.shouldStop ?? (() => false);
  // Literal patterns (fragments, not parameters), so that a generic plan still proves each
  // partial index's predicate.
  const kinds = [
    { key: sql`delivery_key like 'body:%'`, ageMs: retention.bodyWindowMs },
    { key: sql`delivery_key like 'id:%'`, ageMs: retention.idRetentionMs },
  ];
  let deleted = 0;
  for (const { key, ageMs } of kinds) {
    while (!stop()) {
      const { count } = await sql`
        delete from webhook_deliveries where ctid = any(array(
          select ctid from webhook_deliveries
          where ${key} and created_at < now() - make_interval(secs => ${ageMs / 1000})
          order by created_at limit ${chunk} for update skip locked))`;
      deleted += count;
      if (count < chunk) break;
    }
  }
  return deleted;
}
