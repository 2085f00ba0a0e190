/**
 * Housekeeping's purges of expired rows, one per family: run as activities by the housekeeping
 * workflow on the worker's Temporal Schedule, or in process when no schedule can be made (ADR 0279).
 * Its last family is not a purge: the plan downgrades whose billing period has ended (ADR 0291).
 */
import { Context } from '@temporalio/activity';
import type { Logger } from 'pino';
import type postgres from 'postgres';
import { applyDueChanges } from '../billing/subscription.js';
import type { Db } from '../db/client.js';
import { purgeExpiredAudit } from '../db/repositories/audit-retention.js';
import { purgeIdentityRows } from '../db/repositories/identity-retention.js';
import { NOTIFICATION_RETENTION_MS, purgeNotifications } from '../db/repositories/notifications.js';
import { purgeRateLimitWindows } from '../db/repositories/rate-limits.js';
import { purgeSkillInvocations, SKILL_INVOCATION_RETENTION_MS } from '../db/repositories/skill-invocations.js';
import { purgeTriggerFirings, TRIGGER_FIRING_RETENTION_MS } from '../db/repositories/trigger-firings.js';
import { purgeWebhookDeliveries } from '../db/repositories/webhook-deliveries.js';
import { purgeWidgetSessions, WIDGET_SESSION_KEPT_MS } from '../db/repositories/widget-retention.js';
import { BODY_REPLAY_WINDOW_MS, DELIVERY_ID_RETENTION_MS } from '../ingest/ingest.js';
import { purgeExpiredStreamTokens } from '../realtime/stream-tokens.js';
import type { HousekeepingActivities, HousekeepingFamily, PurgedRows } from '../workflows/messages-housekeeping.js';

/** Asked between chunks: a long purge stops there (and resumes on its next run). */
type ShouldStop = () => boolean;

/** The database, as the raw pool most purges use and as drizzle for the billing family. */
export interface HousekeepingStore {
  sql: postgres.Sql;
  db: Db;
}

/** Each family's purge; every one probes an index first, so a run with nothing due costs little. */
export const housekeepingPurges: Record<
  HousekeepingFamily,
  (store: HousekeepingStore, shouldStop: ShouldStop) => Promise<PurgedRows>
> = {
  rateLimitWindows: async ({ sql }) => ({ rateLimitWindows: await purgeRateLimitWindows(sql) }),
  webhookDeliveries: async ({ sql }, shouldStop) => ({
    deliveries: await purgeWebhookDeliveries(
      sql,
      { bodyWindowMs: BODY_REPLAY_WINDOW_MS, idRetentionMs: DELIVERY_ID_RETENTION_MS },
      { shouldStop },
    ),
  }),
  streamTokens: async ({ sql }) => ({ streamTokens: await purgeExpiredStreamTokens(sql) }),
  auditEntries: async ({ sql }, shouldStop) => ({ auditEntries: await purgeExpiredAudit(sql, { shouldStop }) }),
  skillInvocations: async ({ sql }, shouldStop) => ({
    skillInvocations: await purgeSkillInvocations(sql, SKILL_INVOCATION_RETENTION_MS, { shouldStop }),
  }),
  notifications: async ({ sql }, shouldStop) => ({
    notifications: await purgeNotifications(sql, NOTIFICATION_RETENTION_MS, { shouldStop }),
  }),
  triggerFirings: async ({ sql }, shouldStop) => ({
    triggerFirings: await purgeTriggerFirings(sql, TRIGGER_FIRING_RETENTION_MS, { shouldStop }),
  }),
  identityRows: ({ sql }, shouldStop) => purgeIdentityRows(sql, { shouldStop }),
  widgetSessions: async ({ sql }, shouldStop) => ({
    widgetSessions: await purgeWidgetSessions(sql, WIDGET_SESSION_KEPT_MS, { shouldStop }),
  }),
  // Each tenant's downgrade once its period ends, under its row lock. The 10-minute interval is
  // aligned to the epoch, so a run starts at 00:00 UTC when a period ends (ADR 0291).
  planChanges: async ({ db }) => ({ planChanges: await applyDueChanges({ db }, new Date()) }),
};

export function createHousekeepingActivities(deps: HousekeepingStore & { logger?: Logger }): HousekeepingActivities {
  return {
    async purgeExpiredRows(family) {
      const purge = housekeepingPurges[family];
      const ctx = Context.current();
      // Each chunk is a heartbeat; a cancelled activity (worker shutting down) stops between chunks.
      const purged = await purge(deps, () => {
        ctx.heartbeat();
        return ctx.cancellationSignal.aborted;
      });
      if (Object.values(purged).some((n) => n > 0)) deps.logger?.info(purged, 'housekeeping purged expired rows');
      return purged;
    },
  };
}
