import { and, eq, lt, sql } from 'drizzle-orm';
import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { appendEvent } from '../outbox/append.js';
import { findIncident, toIncidentView } from '../db/repositories/incidents.js';
import { incidents, type IncidentStatus } from '../db/schema/incidents.js';
import type { Actor, IncidentView } from '../workflows/messages.js';

export interface StatusChange {
  incidentId: string;
  tenantId: string;
  from: IncidentStatus;
  to: IncidentStatus;
  /** The projection version this change produces; writes with a lower one are ignored. */
  version: number;
  actor: Actor;
  workflowId: string;
  /** The workflow task that decided this write (for the audit entry). */
  historyEventId?: number;
}

export function createProjectionActivities(deps: { db: Db }) {
  const { db } = deps;

  async function readIncident(args: { incidentId: string; tenantId: string }): Promise<IncidentView> {
    const row = await findIncident(db, args.tenantId, args.incidentId);
    if (!row) throw ApplicationFailure.nonRetryable(`incident ${args.incidentId} has no projection`, 'IncidentMissing');
    return toIncidentView(row);
  }

  /**
   * Writes a status change, its events and its audit row in one transaction. Idempotent: the
   * version guard and the idempotency keys make a retry (or a late duplicate) a no-op.
   */
  async function projectStatusChange(change: StatusChange): Promise<IncidentView> {
    await db.transaction(async (tx) => {
      const updated = await tx
        .update(incidents)
        .set({ status: change.to, version: change.version, updatedAt: sql`now()` })
        .where(
          and(
            eq(incidents.id, change.incidentId),
            eq(incidents.tenantId, change.tenantId),
            lt(incidents.version, change.version),
          ),
        )
        .returning({ id: incidents.id });
      if (updated.length === 0) return; // already applied (retry) or superseded
      const key = `${change.incidentId}:v${change.version}`;
      const payload = {
        incidentId: change.incidentId,
        from: change.from,
        to: change.to,
        actorType: change.actor.type,
        actorId: change.actor.id,
      };
      await appendEvent(tx, {
        tenantId: change.tenantId,
        type: 'incident.status_changed',
        incidentId: change.incidentId,
        payload,
        idempotencyKey: `${key}:incident.status_changed`,
      });
      if (change.to === 'resolved') {
        await appendEvent(tx, {
          tenantId: change.tenantId,
          type: 'incident.resolved',
          incidentId: change.incidentId,
          payload,
          idempotencyKey: `${key}:incident.resolved`,
        });
      }
      await appendAudit(tx, {
        tenantId: change.tenantId,
        actorType: change.actor.type,
        actorId: change.actor.id,
        action: 'incident.status_changed',
        targetType: 'incident',
        targetId: change.incidentId,
        incidentId: change.incidentId,
        requestId: change.actor.requestId ?? null,
        workflowId: change.workflowId,
        historyEventId: change.historyEventId ?? null,
        details: { from: change.from, to: change.to, version: change.version },
        idempotencyKey: `${key}:audit`,
      });
    });
    return readIncident(change);
  }

  return { readIncident, projectStatusChange };
}
