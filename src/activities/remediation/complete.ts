import { and, eq, inArray } from 'drizzle-orm';
import type { RemediationActivities } from '../../analysis/remediation-types.js';
import { appendAudit } from '../../db/repositories/audit.js';
import { evidenceItems } from '../../db/schema/investigation.js';
import { remediations } from '../../db/schema/remediation.js';
import { newId } from '../../ids.js';
import { appendEvent } from '../../outbox/append.js';
import { skipPendingSteps, type RemediationContext } from './context.js';

/** Records the outcome: `remediation.completed`, or `remediation.failed` with the failure as evidence. */
export async function completeRemediation(
  ctx: RemediationContext,
  req: Parameters<RemediationActivities['completeRemediation']>[0],
): Promise<void> {
  const { db, clock } = ctx;
  const now = clock();
  await db.transaction(async (tx) => {
    const [updated] = await tx
      .update(remediations)
      .set(
        req.ok
          ? { status: 'completed', completedAt: now, verification: { ok: true, detail: req.detail }, updatedAt: now }
          : {
              status: 'failed',
              completedAt: now,
              failure: req.detail,
              verification: { ok: false, detail: req.detail },
              updatedAt: now,
            },
      )
      .where(
        and(
          eq(remediations.id, req.remediationId),
          eq(remediations.tenantId, req.tenantId),
          inArray(remediations.status, ['approved', 'executing']),
        ),
      )
      .returning({ id: remediations.id });
    if (!updated) return; // already completed or failed (or never approved)
    const type = req.ok ? 'remediation.completed' : 'remediation.failed';
    await appendEvent(tx, {
      tenantId: req.tenantId,
      type,
      incidentId: req.incidentId,
      payload: {
        incidentId: req.incidentId,
        remediationId: req.remediationId,
        ...(req.ok ? { verification: req.detail } : { failure: req.detail }),
      },
      idempotencyKey: `${req.remediationId}:outcome`,
    });
    if (!req.ok) {
      await skipPendingSteps(tx, req.tenantId, req.remediationId); // those after a failed step
      await tx
        .insert(evidenceItems)
        .values({
          id: newId('evi'),
          tenantId: req.tenantId,
          incidentId: req.incidentId,
          agentRole: 'remediation',
          type: 'log',
          source: 'remediation',
          summary: `Remediation ${req.remediationId} failed: ${req.detail}`.slice(0, 1000),
          severity: 'high',
          occurredAt: now,
          rawSnippet: JSON.stringify({ remediationId: req.remediationId, failure: req.detail }),
          dedupeKey: `remediation:${req.remediationId}`,
        })
        .onConflictDoNothing();
    }
    await appendAudit(tx, {
      tenantId: req.tenantId,
      actorType: 'system',
      actorId: 'workflow',
      action: type,
      targetType: 'remediation',
      targetId: req.remediationId,
      incidentId: req.incidentId,
      workflowId: req.workflowId,
      historyEventId: req.historyEventId ?? null,
      details: { ok: req.ok, detail: req.detail },
      idempotencyKey: `${req.remediationId}:outcome:audit`,
    });
  });
}
