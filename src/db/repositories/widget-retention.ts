import type postgres from 'postgres';
import type { PurgeOptions } from './purge.js';

/**
 * A widget session's rows (its event log holds the assistant's replies, its deliveries the push
 * outcomes) are kept 30 days past its deadline, for support questions, then purged with it.
 */
export const WIDGET_SESSION_KEPT_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Purges the sessions whose deadline passed more than `keptMs` ago, with their events, push
 * subscriptions and deliveries, a chunk of sessions per statement (the children go in the same
 * statement, so no session is left half deleted). An open session cannot be that far past its
 * deadline unless its workflow is gone, so the status is not read.
 */
export async function purgeWidgetSessions(
  sql: postgres.Sql,
  keptMs: number = WIDGET_SESSION_KEPT_MS,
  options: PurgeOptions = {},
): Promise<number> {
  const chunk = options.chunkSize ?? 500;
  const stop = options.shouldStop ?? (() => false);
  let deleted = 0;
  while (!stop()) {
    const [row] = await sql<{ sessions: number }[]>`
      with doomed as (
        select id, tenant_id from widget_sessions
        where expires_at < now() - make_interval(secs => ${keptMs / 1000})
        order by expires_at limit ${chunk} for update skip locked
      ), subscriptions as (
        select s.id from widget_push_subscriptions s
        where (s.tenant_id, s.session_id) in (select tenant_id, id from doomed)
      ), deliveries as (
        delete from widget_push_deliveries where subscription_id in (select id from subscriptions)
      ), removed_subscriptions as (
        delete from widget_push_subscriptions where id in (select id from subscriptions)
      ), events as (
        delete from widget_session_events where session_id in (select id from doomed)
      ), sessions as (
        delete from widget_sessions where id in (select id from doomed) returning 1
      )
      select count(*)::int as sessions from sessions`;
    const count = row?.sessions ?? 0;
    deleted += count;
    if (count < chunk) break;
  }
  return deleted;
}
