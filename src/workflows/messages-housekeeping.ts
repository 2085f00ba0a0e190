/**
 * The housekeeping workflow's contract (ADR 0279): the rows it purges, one activity call per
 * family, and the names the worker's schedule starts it by.
 */

/**
 * What one housekeeping run purges, in order; each family is one activity in its timeline. A new
 * family goes at the end: a run in flight across a deploy then replays its recorded activities.
 */
export const housekeepingFamilies = [
  'rateLimitWindows',
  'webhookDeliveries',
  'streamTokens',
  'auditEntries',
  'skillInvocations',
  'notifications',
  'triggerFirings',
  'identityRows',
  'widgetSessions',
  'planChanges',
] as const;
export type HousekeepingFamily = (typeof housekeepingFamilies)[number];

/** Rows deleted, by table (a family may purge more than one). */
export type PurgedRows = Record<string, number>;

export interface HousekeepingActivities {
  purgeExpiredRows(family: HousekeepingFamily): Promise<PurgedRows>;
}

export const housekeepingWorkflowType = 'housekeepingWorkflow';
