import { ApplicationFailure } from '@temporalio/activity';
import { and, eq, sql } from 'drizzle-orm';
import type { BeginInvestigationRequest, BeginInvestigationResult } from '../analysis/investigation-types.js';
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { appendEvent } from '../outbox/append.js';
import { setRootCauseUnlessCorrected } from '../db/repositories/incidents.js';
import { findTenant } from '../db/repositories/tenants.js';
import { consumeQuota } from '../db/repositories/usage.js';
import { events } from '../db/schema/events.js';
import { investigations, triageResults } from '../db/schema/investigation.js';
import { monthlyQuota, usagePeriod } from '../domain/plans.js';

class QuotaUsedUp extends Error {}
/** Another attempt of the same start committed first (a timed-out attempt still running beside its retry). */
class StartRaced extends Error {}

/** The failure type the api turns into 429 `quota_exceeded`. */
export const QUOTA_EXCEEDED = 'QuotaExceeded';

export function createInvestigationLifecycleActivities(deps: { db: Db; clock?: () => Date }) {
  const { db } = deps;
  const clock = deps.clock ?? (() => new Date());

  /**
   * Starts an investigation run: counts it against the plan's monthly investigations, (re)sets
   * the investigation row to `running` with the next run number, clears the incident's root
   * cause, and appends `investigation.started`, in one transaction. Idempotent per
   * `requestKey`. Past the quota a manual start fails (429); an automatic one is recorded as
   * `investigation.failed` and answers `run: null`.
   */
  async function beginInvestigation(
    req: BeginInvestigationRequest & { automatic: boolean },
  ): Promise<BeginInvestigationResult> {
    const key = `${req.incidentId}:investigation-start:${req.requestKey}`;
    const triaged = async () =>
      (
        await db
          .select({ id: triageResults.incidentId })
          .from(triageResults)
          .where(eq(triageResults.incidentId, req.incidentId))
      ).length > 0;
    const [done] = await db.select({ payload: events.payload }).from(events).where(eq(events.idempotencyKey, key));
    if (done) return { run: (done.payload.run as number | null) ?? null, triaged: await triaged() };

    const tenant = await findTenant(db, req.tenantId);
    if (!tenant) throw ApplicationFailure.nonRetryable(`tenant ${req.tenantId} not found`, 'TenantMissing');
    const now = clock();
    const period = usagePeriod(now);
    const limit = monthlyQuota(tenant, 'investigations');

    // The tenant's counter row is counted last: from that statement to the commit it is locked,
    // so concurrent starts of the tenant's investigations (an alert storm opens hundreds) queue
    // on it only for the audit insert and the commit, not behind this run's wait for the
    // incident row, which ingestion batches update on every repeat of its alert.
    let run: number | null = null;
    try {
      run = await db.transaction(async (tx) => {
        const [row] = await tx
          .insert(investigations)
          .values({ incidentId: req.incidentId, tenantId: req.tenantId, status: 'running', run: 1 })
          .onConflictDoUpdate({
            target: investigations.incidentId,
            set: {
              status: 'running',
              run: sql`${investigations.run} + 1`,
              rootCause: null,
              confidence: 0,
              recommendedActions: [],
              findings: [],
              hypotheses: [],
              failure: null,
              startedAt: sql`now()`,
              completedAt: null,
              updatedAt: sql`now()`,
            },
          })
          .returning({ run: investigations.run });
        // The machine's last conclusion is cleared; a person's correction (feedback correct_rca)
        // stays, as synthesis keeps it.
        await setRootCauseUnlessCorrected(tx, req.tenantId, req.incidentId, null);
        const appended = await appendEvent(tx, {
          tenantId: req.tenantId,
          type: 'investigation.started',
          incidentId: req.incidentId,
          payload: { incidentId: req.incidentId, run: row!.run, actorType: req.actor.type, actorId: req.actor.id },
          idempotencyKey: key,
        });
        // The same start committed by another attempt meanwhile: undo this one's run and count.
        if (!appended) throw new StartRaced();
        const used = await consumeQuota(tx, { tenantId: req.tenantId, period, metric: 'investigations', limit });
        if (used === null) throw new QuotaUsedUp(); // rolls the run back
        await appendAudit(tx, {
          tenantId: req.tenantId,
          actorType: req.actor.type,
          actorId: req.actor.id,
          action: 'investigation.started',
          targetType: 'incident',
          targetId: req.incidentId,
          incidentId: req.incidentId,
          requestId: req.actor.requestId ?? null,
          workflowId: req.workflowId,
          historyEventId: req.historyEventId ?? null,
          details: { run: row!.run, investigationsUsed: used, limit },
          idempotencyKey: `${key}:audit`,
        });
        return row!.run;
      });
    } catch (err) {
      if (err instanceof StartRaced) {
        const [stored] = await db
          .select({ payload: events.payload })
          .from(events)
          .where(eq(events.idempotencyKey, key));
        return { run: (stored?.payload.run as number | null) ?? null, triaged: await triaged() };
      }
      if (!(err instanceof QuotaUsedUp)) throw err;
    }
    if (run !== null) return { run, triaged: await triaged() };

    const message = `The monthly investigation quota of ${limit} is used up for ${period}`;
    if (!req.automatic) throw ApplicationFailure.nonRetryable(message, QUOTA_EXCEEDED);
    await db.transaction(async (tx) => {
      await appendEvent(tx, {
        tenantId: req.tenantId,
        type: 'investigation.failed',
        incidentId: req.incidentId,
        payload: { incidentId: req.incidentId, run: null, reason: 'quota_exceeded', message },
        idempotencyKey: key,
      });
    });
    return { run: null, triaged: await triaged() };
  }

  async function latestInvestigation(req: {
    incidentId: string;
    tenantId: string;
  }): Promise<{ run: number; status: string } | null> {
    const [row] = await db
      .select({ run: investigations.run, status: investigations.status })
      .from(investigations)
      .where(and(eq(investigations.incidentId, req.incidentId), eq(investigations.tenantId, req.tenantId)));
    return row ?? null;
  }

  return { beginInvestigation, latestInvestigation };
}
