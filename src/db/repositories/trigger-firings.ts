import type postgres from 'postgres';
import { deleteOldestInChunks, type PurgeOptions } from './purge.js';

/**
 * How long a settled trigger firing (succeeded, or failed for good) is kept after it settled
 * Its row decides the firing once: the dispatcher writes it in the transaction
 * that moves the 'triggers' consumer past the event, so an event behind that position is never
 * matched again and its row has nothing left to prevent. What the firing did lives on in the
 * audit log (`trigger.fired`, `trigger.failed`) and in what its action made.
 */
export const TRIGGER_FIRING_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Deletes firings settled more than `retentionMs` ago, oldest first, in chunks; pending and
 * running ones stay whatever their age. One status at a time, so each statement walks the
 * `(status, updated_at)` index in order.
 */
export async function purgeTriggerFirings(
  sql: postgres.Sql,
  retentionMs = TRIGGER_FIRING_RETENTION_MS,
  options: PurgeOptions = {},
): Promise<number> {
  const settled = { ...options, age: 'updated_at' as const };
  return (
    (await deleteOldestInChunks(sql, 'trigger_firings', retentionMs, sql`status = 'succeeded'`, settled)) +
    (await deleteOldestInChunks(sql, 'trigger_firings', retentionMs, sql`status = 'failed'`, settled))
  );
}
