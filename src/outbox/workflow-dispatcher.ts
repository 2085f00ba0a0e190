/**
 * The workflow dispatcher: starts and signals incident and export workflows from what the
 * database holds for them (incidents without a started workflow, stored alerts not yet
 * delivered, exports not started), woken by ingestion's NOTIFY and on an interval. Every start
 * and signal is idempotent, so the database is the outbox of the workflow engine.
 */
import { and, asc, eq, inArray, isNotNull, isNull, lt, or, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type postgres from 'postgres';
import type { Db } from '../db/client.js';
import { markWorkflowStarted, toWorkflowInput } from '../db/repositories/incidents.js';
import { auditExports } from '../db/schema/audit.js';
import { incidents } from '../db/schema/incidents.js';
import { ingestedEvents } from '../db/schema/ingestion.js';
import { tenants } from '../db/schema/tenants.js';
import type { WorkflowPort } from '../temporal/port.js';
import { dispatchChannel } from './append.js';
import { failureLogFields, isWorkflowEngineUnavailable } from '../dependency-failures.js';
import type { ReceivedAlert } from '../workflows/messages.js';

export interface WorkflowDispatcherDeps {
  db: Db;
  sql: postgres.Sql;
  workflows: WorkflowPort;
  logger: Logger;
}

/** Manual incidents are started by the api itself; only a start older than this was lost. */
export const MANUAL_START_GRACE_MS = 10_000;
const BATCH = 500;
/**
 * Starts and signals in flight at once. One at a time, a backlog after a Temporal outage took
 * about a minute per 500 incidents on a small machine (a round trip to Temporal each).
 */
export const DISPATCH_CONCURRENCY = 8;

/**
 * Runs `work` for the items, `DISPATCH_CONCURRENCY` at a time, in order. After a wave with a
 * failure nothing more is tried (Temporal is likely unavailable: the next pass retries);
 * resolves with how many succeeded. Failures because Temporal cannot be reached are told once a
 * wave, by their first, with how many there were and no stack: while Temporal is away every item
 * of every pass fails so, and one line per item buried the outage in hundreds of stack traces.
 */
async function inWaves<T>(
  items: T[],
  work: (item: T) => Promise<void>,
  onError: (err: unknown, item: T, sameFailures?: number) => void,
): Promise<number> {
  let done = 0;
  for (let i = 0; i < items.length; i += DISPATCH_CONCURRENCY) {
    const wave = items.slice(i, i + DISPATCH_CONCURRENCY);
    const settled = await Promise.allSettled(wave.map((item) => work(item)));
    const unreachable: Array<{ err: unknown; item: T }> = [];
    settled.forEach((outcome, j) => {
      if (outcome.status === 'fulfilled') done++;
      else if (isWorkflowEngineUnavailable(outcome.reason)) unreachable.push({ err: outcome.reason, item: wave[j]! });
      else onError(outcome.reason, wave[j]!);
    });
    if (unreachable.length > 0) onError(unreachable[0]!.err, unreachable[0]!.item, unreachable.length);
    if (settled.some((outcome) => outcome.status === 'rejected')) break;
  }
  return done;
}

/** What a dispatcher log line says of a failure: the error, or for an outage its reason and count. */
const failureOf = (err: unknown, sameFailures?: number) =>
  sameFailures === undefined ? { err } : { ...failureLogFields(err), failedInWave: sameFailures };

/**
 * Starts the workflow of every incident that has none yet: automated incidents (opened by
 * ingestion, started here) and manual ones whose start was lost in a crash. Starting is
 * idempotent, so a race with the api is harmless.
 */
export async function reconcileIncidents(
  deps: WorkflowDispatcherDeps,
  options: { olderThanMs?: number } = {},
): Promise<number> {
  const graceSeconds = (options.olderThanMs ?? MANUAL_START_GRACE_MS) / 1000;
  const rows = await deps.db
    .select()
    .from(incidents)
    .where(
      and(
        isNull(incidents.workflowStartedAt),
        or(
          eq(incidents.source, 'automated'),
          lt(incidents.createdAt, sql`now() - make_interval(secs => ${graceSeconds})`),
        ),
      ),
    )
    .orderBy(asc(incidents.createdAt))
    .limit(BATCH);
  return inWaves(
    rows,
    async (row) => {
      await deps.workflows.startIncident(toWorkflowInput(row), row.title);
      await markWorkflowStarted(deps.db, row.id);
    },
    (err, row, same) =>
      deps.logger.warn(
        { ...failureOf(err, same), incidentId: row.id },
        'could not start the incident workflow; will retry',
      ),
  );
}

/** The api starts an export's workflow itself; only a start older than this was lost. */
export const EXPORT_START_GRACE_MS = 10_000;

/**
 * Starts the workflow of every audit export whose start was lost (Temporal unavailable when it
 * was submitted, or a crash between the insert and the start). Starting is idempotent.
 */
export async function reconcileExports(
  deps: WorkflowDispatcherDeps,
  options: { olderThanMs?: number } = {},
): Promise<number> {
  const graceSeconds = (options.olderThanMs ?? EXPORT_START_GRACE_MS) / 1000;
  const rows = await deps.db
    .select({ id: auditExports.id, tenantId: auditExports.tenantId })
    .from(auditExports)
    .where(
      and(
        isNull(auditExports.workflowStartedAt),
        lt(auditExports.submittedAt, sql`now() - make_interval(secs => ${graceSeconds})`),
      ),
    )
    .orderBy(asc(auditExports.submittedAt))
    .limit(BATCH);
  let started = 0;
  for (const row of rows) {
    try {
      await deps.workflows.startAuditExport({ exportId: row.id, tenantId: row.tenantId });
      await deps.db
        .update(auditExports)
        .set({ workflowStartedAt: sql`now()` })
        .where(and(eq(auditExports.id, row.id), isNull(auditExports.workflowStartedAt)));
      started++;
    } catch (err) {
      deps.logger.warn({ err, exportId: row.id }, 'could not start the export workflow; will retry');
      break; // Temporal is likely unavailable: leave the rest for the next pass
    }
  }
  return started;
}

/** An incident signalled this recently waits while its new alerts only repeat "firing". */
export const REPEAT_SIGNAL_INTERVAL_MS = 10_000;

/**
 * Signals every stored alert that attached to an already open incident to that incident's
 * workflow, one signal per incident carrying all its waiting alerts in order. At-least-once:
 * the workflow ignores event ids it has seen. During an alert storm, an incident signalled in
 * the last `REPEAT_SIGNAL_INTERVAL_MS` is skipped while everything waiting for it is a firing
 * repeat (its occurrence count is already stored); it then gets them all in one signal.
 */
export async function deliverPendingAlerts(
  deps: WorkflowDispatcherDeps,
  recentlySignalled: Map<string, number> = new Map(),
  repeatIntervalMs = REPEAT_SIGNAL_INTERVAL_MS,
): Promise<number> {
  const now = Date.now();
  for (const [id, at] of recentlySignalled) if (now - at >= repeatIntervalMs) recentlySignalled.delete(id);
  const quiet = [...recentlySignalled.keys()];
  const rows = await deps.db
    .select({
      eventId: ingestedEvents.id,
      incidentId: ingestedEvents.incidentId,
      status: ingestedEvents.status,
      occurredAt: ingestedEvents.occurredAt,
      autoResolve: sql<boolean>`coalesce((${tenants.settings}->>'autoResolve')::boolean, false)`,
      incidentRecovered: sql<boolean>`${incidents.recoveredAt} is not null`,
    })
    .from(ingestedEvents)
    .innerJoin(incidents, eq(incidents.id, ingestedEvents.incidentId))
    .innerJoin(tenants, eq(tenants.id, ingestedEvents.tenantId))
    .where(
      and(
        isNull(ingestedEvents.deliveredAt),
        isNotNull(ingestedEvents.incidentId),
        isNotNull(incidents.workflowStartedAt),
        quiet.length > 0
          ? sql`not (${inArray(ingestedEvents.incidentId, quiet)} and not exists (
              select 1 from ingested_events r
              where r.incident_id = ${ingestedEvents.incidentId} and r.delivered_at is null and r.status = 'resolved'))`
          : undefined,
      ),
    )
    .orderBy(asc(ingestedEvents.receivedAt), asc(ingestedEvents.id))
    .limit(BATCH);
  const byIncident = new Map<string, { alerts: ReceivedAlert[]; autoResolve: boolean; incidentRecovered: boolean }>();
  for (const row of rows) {
    const group = byIncident.get(row.incidentId!) ?? {
      alerts: [],
      autoResolve: row.autoResolve,
      incidentRecovered: row.incidentRecovered,
    };
    group.alerts.push({
      eventId: row.eventId,
      status: row.status ?? 'firing',
      occurredAt: row.occurredAt.toISOString(),
    });
    group.autoResolve = row.autoResolve;
    byIncident.set(row.incidentId!, group);
  }
  let delivered = 0;
  await inWaves(
    [...byIncident],
    async ([incidentId, group]) => {
      await deps.workflows.signalAlerts(incidentId, group); // 'gone': the incident was closed since
      recentlySignalled.set(incidentId, Date.now());
      await deps.db
        .update(ingestedEvents)
        .set({ deliveredAt: sql`now()` })
        .where(
          inArray(
            ingestedEvents.id,
            group.alerts.map((a) => a.eventId),
          ),
        );
      delivered += group.alerts.length;
    },
    (err, [incidentId], same) =>
      deps.logger.warn({ ...failureOf(err, same), incidentId }, 'could not signal the incident workflow; will retry'),
  );
  return delivered;
}

export interface WorkflowDispatcher {
  /** One full pass: starts, then signals. Resolves with what it did. */
  runOnce(): Promise<{ started: number; delivered: number; exportsStarted: number }>;
  stop(): Promise<void>;
}

export interface WorkflowDispatcherOptions {
  intervalMs?: number;
  listen?: boolean;
  minGapMs?: number;
  repeatIntervalMs?: number;
}

/**
 * Runs passes when ingestion NOTIFYs, and every `intervalMs` as a safety net (lost
 * notifications, Temporal back after an outage, crashed api processes). Passes never overlap;
 * a wake-up during a pass schedules one more.
 */
export function startWorkflowDispatcher(
  deps: WorkflowDispatcherDeps,
  options: WorkflowDispatcherOptions = {},
): WorkflowDispatcher {
  let running: Promise<unknown> | null = null;
  let again = false;
  let stopped = false;
  let lastPassEnded = 0;
  let delayed: NodeJS.Timeout | null = null;
  const recentlySignalled = new Map<string, number>();
  const minGapMs = options.minGapMs ?? 250;

  const runOnce = async () => {
    const started = await reconcileIncidents(deps);
    const delivered = await deliverPendingAlerts(deps, recentlySignalled, options.repeatIntervalMs);
    const exportsStarted = await reconcileExports(deps);
    return { started, delivered, exportsStarted };
  };

  const wake = (): void => {
    if (stopped || delayed) return;
    if (running) {
      again = true;
      return;
    }
    // Wake-ups closer together than minGapMs are folded into one pass: under load each pass
    // then carries more, and Temporal sees fewer, larger signals.
    const wait = lastPassEnded + minGapMs - Date.now();
    if (wait > 0) {
      delayed = setTimeout(() => {
        delayed = null;
        wake();
      }, wait);
      return;
    }
    running = runOnce()
      .then(({ started, delivered, exportsStarted }) => {
        if (started + delivered >= BATCH || exportsStarted >= BATCH) again = true; // more waiting
      })
      .catch((err: unknown) => deps.logger.warn({ err }, 'dispatch pass failed'))
      .finally(() => {
        running = null;
        lastPassEnded = Date.now();
        if (again) {
          again = false;
          wake();
        }
      });
  };

  const timer = setInterval(wake, options.intervalMs ?? 5_000);
  timer.unref();
  const listening =
    options.listen === false
      ? Promise.resolve(null)
      : deps.sql
          .listen(dispatchChannel, () => wake(), wake)
          .catch((err: unknown) => {
            deps.logger.warn({ err }, 'LISTEN failed; dispatching on the interval only');
            return null;
          });

  return {
    runOnce,
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (delayed) clearTimeout(delayed);
      const listener = await listening;
      // Its connection may be gone already (PostgreSQL stopped first, as a terminal's Ctrl-C
      // does): nothing is left to unlisten, and the rest of the stop must still run.
      await listener?.unlisten().catch(() => undefined);
      await running;
    },
  };
}
