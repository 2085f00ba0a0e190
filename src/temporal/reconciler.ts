import type { Logger } from 'pino';
import type postgres from 'postgres';
import type { Db } from '../db/client.js';
import { findUnstartedIncidents, markWorkflowStarted, toWorkflowInput } from '../db/repositories/incidents.js';
import { purgeRateLimitWindows } from '../db/repositories/rate-limits.js';
import type { WorkflowPort } from './port.js';

export interface ReconcilerDeps {
  db: Db;
  sql: postgres.Sql;
  workflows: WorkflowPort;
  logger: Logger;
}

/**
 * Starts the workflow of every incident whose start was lost (a crash between the creating
 * transaction and the start call). Starting is idempotent, so a race with the api is harmless.
 */
export async function reconcileIncidents(deps: ReconcilerDeps, options: { olderThanMs: number; batch?: number }): Promise<number> {
  const rows = await findUnstartedIncidents(deps.db, options.olderThanMs, options.batch ?? 100);
  let started = 0;
  for (const row of rows) {
    try {
      await deps.workflows.startIncident(toWorkflowInput(row), row.title);
      await markWorkflowStarted(deps.db, row.id);
      started++;
    } catch (err) {
      deps.logger.warn({ err, incidentId: row.id }, 'reconciler could not start the incident workflow');
    }
  }
  if (started > 0) deps.logger.info({ started }, 'reconciler started lost incident workflows');
  return started;
}

/** Runs the reconciler and housekeeping every `intervalMs` until stopped. */
export function startReconciler(deps: ReconcilerDeps, intervalMs = 15_000): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = Promise.all([
      reconcileIncidents(deps, { olderThanMs: 10_000 }),
      purgeRateLimitWindows(deps.sql),
    ]).catch((err: unknown) => deps.logger.warn({ err }, 'reconciler pass failed'));
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
