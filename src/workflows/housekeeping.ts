/**
 * One housekeeping run, started by the worker's Temporal Schedule (src/temporal/housekeeping-schedule.ts):
 * each family of expired rows is purged by its own activity, so the run's timeline in the
 * Temporal UI says what was deleted, and a failing purge does not hold back the others.
 */
import { proxyActivities } from '@temporalio/workflow';
import {
  housekeepingFamilies,
  type HousekeepingActivities,
  type HousekeepingFamily,
  type PurgedRows,
} from './messages-housekeeping.js';

const summaries: Record<HousekeepingFamily, string> = {
  rateLimitWindows: 'purge rate-limit windows older than 5 minutes',
  webhookDeliveries: 'purge webhook delivery bodies and ids past their replay windows',
  streamTokens: 'purge expired event-stream tokens',
  auditEntries: 'purge audit entries past their plan’s retention',
  skillInvocations: 'purge skill invocation records past their retention',
  notifications: 'purge notifications past their retention',
  triggerFirings: 'purge settled trigger firings past their retention',
  identityRows: 'purge expired sign-in states and refresh tokens',
  widgetSessions: 'purge widget sessions 30 days past their deadline, with their events and pushes',
  planChanges: 'apply the plan downgrades whose billing period has ended',
};

// A purge deletes in chunks and resumes where it stopped, so a retry is harmless; the next
// scheduled run retries anyway, so a few attempts suffice.
const purges = Object.fromEntries(
  housekeepingFamilies.map((family) => [
    family,
    proxyActivities<HousekeepingActivities>({
      summary: summaries[family],
      startToCloseTimeout: '10 minutes',
      heartbeatTimeout: '1 minute',
      retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
    }),
  ]),
) as Record<HousekeepingFamily, ReturnType<typeof proxyActivities<HousekeepingActivities>>>;

export async function housekeepingWorkflow(): Promise<PurgedRows> {
  const purged: PurgedRows = {};
  for (const family of housekeepingFamilies) {
    // One family failing for good is reported by its activity; the others still run.
    const rows = await purges[family].purgeExpiredRows(family).catch(() => ({}));
    Object.assign(purged, rows);
  }
  return purged;
}
