import type postgres from 'postgres';
import { deleteOldestInChunks, type PurgeOptions } from './purge.js';

export interface DeliveryRetention {
  /** A body-hash key is answered only this long (the replay window), then it is deleted. */
  bodyWindowMs: number;
  /** A tool's delivery id is answered this long, then it is deleted. */
  idRetentionMs: number;
}

/**
 * Deletes the delivery records no retry can be answered from any more, oldest first, in
 * statements of `chunkSize` rows, until none is left or `shouldStop` says so. Each kind of key
 * walks its own partial index (migration 0013). Rows a concurrent batch has locked are skipped
 * and left for the next purge. Returns how many rows it deleted.
 */
export async function purgeWebhookDeliveries(
  sql: postgres.Sql,
  retention: DeliveryRetention,
  options: PurgeOptions = {},
): Promise<number> {
  // Literal patterns (fragments, not parameters), so that a generic plan still proves each
  // partial index's predicate.
  return (
    (await deleteOldestInChunks(
      sql,
      'webhook_deliveries',
      retention.bodyWindowMs,
      sql`delivery_key like 'body:%'`,
      options,
    )) +
    (await deleteOldestInChunks(
      sql,
      'webhook_deliveries',
      retention.idRetentionMs,
      sql`delivery_key like 'id:%'`,
      options,
    ))
  );
}
