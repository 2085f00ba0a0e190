/**
 * Housekeeping as a Temporal Schedule (ADR 0279): created idempotently when the worker starts,
 * listed, paused and triggered in the Temporal UI, run once per interval however many workers
 * there are. When no schedule can be made the worker purges in process instead, and says why.
 */
import { ScheduleAlreadyRunning, type Client, type ScheduleOptionsAction } from '@temporalio/client';
import type { Logger } from 'pino';
import { housekeepingWorkflowType } from '../workflows/messages-housekeeping.js';

/** Every ten minutes by default: expired rows wait that much longer, and the UI lists 144 runs a day, not 1,440. */
export const HOUSEKEEPING_INTERVAL_MS = 10 * 60_000;

/** One schedule per task queue: the workers of that queue run its purges. */
export const housekeepingScheduleId = (taskQueue: string): string => `housekeeping-${taskQueue}`;

export interface HousekeepingScheduleOptions {
  taskQueue: string;
  intervalMs?: number;
}

function scheduleAction(taskQueue: string): ScheduleOptionsAction {
  return {
    type: 'startWorkflow',
    workflowType: housekeepingWorkflowType,
    taskQueue,
    // The schedule appends each run's time to this id.
    workflowId: `housekeeping-${taskQueue}`,
    staticSummary: 'Housekeeping: purge expired rows',
    workflowExecutionTimeout: '1 hour',
  };
}

/**
 * Creates the schedule, or brings an existing one's interval and action up to date (its paused
 * state, and any note an SRE left, are kept). Returns the schedule id.
 */
export async function ensureHousekeepingSchedule(
  client: Client,
  options: HousekeepingScheduleOptions,
): Promise<string> {
  const scheduleId = housekeepingScheduleId(options.taskQueue);
  const spec = { intervals: [{ every: options.intervalMs ?? HOUSEKEEPING_INTERVAL_MS }] };
  const action = scheduleAction(options.taskQueue);
  try {
    await client.schedule.create({
      scheduleId,
      spec,
      action,
      // A run still purging when the next is due: the next is skipped, never stacked.
      policies: { overlap: 'SKIP', catchupWindow: '1 minute' },
      state: { note: 'Purges expired rows (retention, deliveries, tokens). Pause to stop purging.' },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action }));
  }
  return scheduleId;
}

/**
 * The schedule, or the in-process loop when the schedule cannot be made (a server without
 * schedules, no permission): `startLoop` runs then, and the reason is logged.
 */
export function startHousekeepingSchedule(
  deps: { client: Client; logger: Logger },
  options: HousekeepingScheduleOptions,
  startLoop: () => { stop(): Promise<void> },
): { stop(): Promise<void> } {
  let loop: { stop(): Promise<void> } | null = null;
  let stopped = false;
  const ensured = ensureHousekeepingSchedule(deps.client, options).then(
    (scheduleId) => deps.logger.info({ scheduleId }, 'housekeeping runs on its Temporal Schedule'),
    (err: unknown) => {
      deps.logger.warn({ err }, 'could not create the housekeeping schedule; purging in this process instead');
      if (!stopped) loop = startLoop();
    },
  );
  return {
    async stop() {
      stopped = true;
      await ensured;
      await (loop as { stop(): Promise<void> } | null)?.stop();
    },
  };
}
