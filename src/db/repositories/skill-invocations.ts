import type postgres from 'postgres';
import { deleteOldestInChunks, type PurgeOptions } from './purge.js';

/**
 * How long a skill invocation record is kept. It answers a retried call with the same
 * idempotency key: an agent's within its run (minutes), a remediation step's while its
 * remediation can still run (an approval waits at most 7 days, then the step's retries take
 * minutes), the test endpoint's while its workflow runs. What a call returned lives on in the
 * evidence item or the remediation step it fed.
 */
export const SKILL_INVOCATION_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** Deletes skill invocation records older than `retentionMs`, oldest first, in chunks. */
export function purgeSkillInvocations(
  sql: postgres.Sql,
  retentionMs = SKILL_INVOCATION_RETENTION_MS,
  options: PurgeOptions = {},
): Promise<number> {
  return deleteOldestInChunks(sql, 'skill_invocations', retentionMs, null, options);
}
