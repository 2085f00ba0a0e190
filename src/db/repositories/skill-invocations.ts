import type postgres from 'postgres';
import type { PurgeOptions } from './webhook-deliveries.js';

/**
 * How long a skill invocation record is kept. It answers a retried call with the same
 * idempotency key: an agent's within its run (minutes), a remediation step's while its
 * remediation can still run (an approval waits at most 7 days, then the step's retries take
 * minutes), the test endpoint's while its workflow runs. What a call returned lives on in the
 * evidence item or the remediation step it fed.
 */
export const SKILL_INVOCATION_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Deletes skill invocation records older than `retentionMs`, oldest first, in statements of
 * `chunkSize` rows, until none is left or `shouldStop` says so. Rows another session has locked
 * are skipped and left for the next purge. Returns how many rows it deleted.
 */
export async function purgeSkillInvocations(sql: postgres.Sql, retentionMs = SKILL_INVOCATION_RETENTION_MS, options: PurgeOptions = {}): Promise<number> {
  const chunk = options.chunkSize ?? 5_000;
  const stop = options.shouldStop ?? (() => false);
  let deleted = 0;
  while (!stop()) {
    const { count } = await sql`
      delete from skill_invocations where ctid = any(array(
        select ctid from skill_invocations
        where created_at < now() - make_interval(secs => ${retentionMs / 1000})
        order by created_at limit ${chunk} for update skip locked))`;
    deleted += count;
    if (count < chunk) break;
  }
  return deleted;
}
