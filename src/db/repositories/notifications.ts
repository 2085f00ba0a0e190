import type postgres from 'postgres';
import { deleteOldestInChunks, type PurgeOptions } from './purge.js';

/**
 * How long a notification is kept, read or not. Every event fans out to every
 * user the tenant has seen, so without a bound the table grows with events × users. A month
 * covers any approval (its deadline is at most 7 days) and a person back from leave; what a
 * notification pointed at (the incident, its timeline, the audit log) lives on.
 */
export const NOTIFICATION_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** Deletes notifications older than `retentionMs`, oldest first, in chunks. */
export function purgeNotifications(
  sql: postgres.Sql,
  retentionMs = NOTIFICATION_RETENTION_MS,
  options: PurgeOptions = {},
): Promise<number> {
  return deleteOldestInChunks(sql, 'notifications', retentionMs, null, options);
}
