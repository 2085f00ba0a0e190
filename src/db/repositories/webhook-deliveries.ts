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
 * walks its own partial index (migration 0013); the patterns are literals so that a generic plan
 * still proves the index's predicate. Rows a concurrent batch has locked are skipped and left for
 * the next purge. Returns how many rows it deleted.
 */
export async function purgeWebhookDeliveries(sql: postgres.Sql, retention: DeliveryRetention, options: PurgeOptions = {}): Promise<number> {
  const chunk = options.chunkSize ?? 5_000;
  const stop = options.shouldStop ?? (() => false);
  const statements = [
    (limit: number) => sql`
      delete from webhook_deliveries where ctid = any(array(
        select ctid from webhook_deliveries
        where delivery_key like 'body:%' and created_at < now() - make_interval(secs => ${retention.bodyWindowMs / 1000})
        order by created_at limit ${limit} for update skip locked))`,
    (limit: number) => sql`
      delete from webhook_deliveries where ctid = any(array(
        select ctid from webhook_deliveries
        where delivery_key like 'id:%' and created_at < now() - make_interval(secs => ${retention.idRetentionMs / 1000})
        order by created_at limit ${limit} for update skip locked))`,
  ];
  let deleted = 0;
  for (const statement of statements) {
    while (!stop()) {
      const { count } = await statement(chunk);
      deleted += count;
      if (count < chunk) break;
    }
  }
  return deleted;
}
