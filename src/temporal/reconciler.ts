import type { Logger } from 'pino';
import type postgres from 'postgres';
import { releaseHeldAlerts } from '../ingest/release-held.js';
import type { Client } from '@temporalio/client';
import { housekeepingPurges, type HousekeepingStore } from '../activities/housekeeping.js';
import { housekeepingFamilies, type PurgedRows } from '../workflows/messages-housekeeping.js';
import { startHousekeepingSchedule } from './housekeeping-schedule.js';
import {
  startWorkflowDispatcher,
  type WorkflowDispatcher,
  type WorkflowDispatcherDeps,
  type WorkflowDispatcherOptions,
} from '../outbox/workflow-dispatcher.js';

export type ReconcilerDeps = WorkflowDispatcherDeps;
export type Dispatcher = WorkflowDispatcher;

/**
 * The in-process fallback of the housekeeping schedule (src/temporal/housekeeping-schedule.ts).
 * Once at start and every `intervalMs` (default 60 s), runs every housekeeping family in order:
 * the purges of expired rows, then the plan downgrades whose billing period has ended.
 */
export function startHousekeeping(
  deps: HousekeepingStore & { logger: Logger },
  options: { intervalMs?: number } = {},
): { stop(): Promise<void> } {
  let stopped = false;
  // Housekeeping runs beside the passes, never inside one: after an alert storm the purge can
  // have hundreds of thousands of delivery records to delete, and starts and signals must not
  // wait for it. Each purge probes an index first, so a run with nothing due costs little.
  let housekeeping: Promise<void> | null = null;
  const housekeep = (): void => {
    if (stopped || housekeeping) return;
    housekeeping = (async () => {
      const shouldStop = () => stopped;
      const purged: PurgedRows = {};
      for (const family of housekeepingFamilies) {
        Object.assign(purged, await housekeepingPurges[family](deps, shouldStop));
      }
      if (Object.values(purged).some((n) => n > 0)) deps.logger.info(purged, 'housekeeping purged expired rows');
    })()
      .catch((err: unknown) => deps.logger.warn({ err }, 'housekeeping failed; will retry'))
      .finally(() => {
        housekeeping = null;
      });
  };

  const timer = setInterval(housekeep, options.intervalMs ?? 60_000);
  timer.unref();
  housekeep();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await housekeeping;
    },
  };
}

/**
 * The worker process's background duties beside the workflows: the workflow dispatcher
 * (src/outbox/workflow-dispatcher.ts) and housekeeping, which runs beside its passes.
 */
export function startDispatcher(
  deps: ReconcilerDeps,
  options: WorkflowDispatcherOptions & {
    housekeepingIntervalMs?: number;
    /** Housekeeping as a Temporal Schedule on this client and task queue; in process without it. */
    housekeepingSchedule?: { client: Client; taskQueue: string };
  } = {},
): Dispatcher {
  const loop = () => startHousekeeping(deps, { intervalMs: options.housekeepingIntervalMs });
  const housekeeping = options.housekeepingSchedule
    ? startHousekeepingSchedule(
        { client: options.housekeepingSchedule.client, logger: deps.logger },
        { taskQueue: options.housekeepingSchedule.taskQueue },
        loop,
      )
    : loop();
  const release = startHeldRelease(deps);
  const dispatcher = startWorkflowDispatcher(deps, options);
  return {
    runOnce: dispatcher.runOnce,
    async stop() {
      await Promise.all([dispatcher.stop(), housekeeping.stop(), release.stop()]);
    },
  };
}

/**
 * Every few seconds, opens the incidents of correlation-rule groups whose held alerts have fired
 * for the rule's `forMinutes`: no delivery may come to release them (src/ingest/release-held.ts).
 * The incidents it opens are started by the dispatcher, which their commit notifies.
 */
function startHeldRelease(deps: { sql: postgres.Sql; logger: Logger }, intervalMs = 5_000): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (running) return;
    running = releaseHeldAlerts(deps.sql)
      .then((opened) => {
        if (opened > 0) deps.logger.info({ opened }, 'opened the incidents of held alerts');
      })
      .catch((err: unknown) => deps.logger.warn({ err }, 'could not release held alerts; will retry'))
      .finally(() => {
        running = null;
      });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
