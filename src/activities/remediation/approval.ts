import { ApplicationFailure } from '@temporalio/activity';
import { and, eq } from 'drizzle-orm';
import type {
  ApprovalDecided,
  ApprovalDecisionRecord,
  RemediationActivities,
} from '../../analysis/remediation-types.js';
import { appendAudit } from '../../db/repositories/audit.js';
import { approvals, remediations } from '../../db/schema/remediation.js';
import { appendEvent } from '../../outbox/append.js';
import { skipPendingSteps, type RemediationContext } from './context.js';

/** Records the decision on a pending approval once; a repeat answers with the stored decision. */
export async function recordApprovalDecision(
  ctx: RemediationContext,
  req: ApprovalDecisionRecord,
): Promise<ApprovalDecided> {
  const { db, clock } = ctx;
  const read = async () => {
    const [row] = await db
      .select()
      .from(approvals)
      .where(and(eq(approvals.tenantId, req.tenantId), eq(approvals.id, req.approvalId)));
    if (!row) throw ApplicationFailure.nonRetryable(`approval ${req.approvalId} not found`, 'ApprovalMissing');
    return row;
  };
  const answer = (row: typeof approvals.$inferSelect): ApprovalDecided => {
    const decision = row.status === 'approved' ? 'approve' : 'reject';
    return {
      approvalId: row.id,
      decision,
      remediationId: row.remediationId,
      // The interface's value: approving starts execution at once.
      remediationStatus: decision === 'approve' ? 'executing' : 'rejected',
      decidedAt: row.decidedAt!.toISOString(),
    };
  };
  const existing = await read();
  if (existing.status === 'approved' || existing.status === 'rejected') return answer(existing);
  if (existing.status === 'expired') {
    throw ApplicationFailure.nonRetryable(
      `approval ${req.approvalId} expired (${existing.expiredReason ?? 'deadline'})`,
      'ApprovalExpired',
    );
  }
  const approve = req.decision === 'approve';
  const now = clock();
  await db.transaction(async (tx) => {
    const [updated] = await tx
      .update(approvals)
      .set({
        status: approve ? 'approved' : 'rejected',
        decidedAt: now,
        decidedBy: req.actor.id,
        decidedByType: req.actor.type,
        notes: req.notes ?? null,
      })
      .where(
        and(eq(approvals.id, req.approvalId), eq(approvals.tenantId, req.tenantId), eq(approvals.status, 'pending')),
      )
      .returning({ id: approvals.id });
    if (!updated) return; // decided concurrently: the stored decision stands
    await tx
      .update(remediations)
      .set({ status: approve ? 'approved' : 'rejected', updatedAt: now })
      .where(
        and(
          eq(remediations.id, req.remediationId),
          eq(remediations.tenantId, req.tenantId),
          eq(remediations.status, 'awaiting_approval'),
        ),
      );
    if (!approve) await skipPendingSteps(tx, req.tenantId, req.remediationId);
    await appendEvent(tx, {
      tenantId: req.tenantId,
      type: approve ? 'remediation.approved' : 'remediation.rejected',
      incidentId: req.incidentId,
      payload: {
        incidentId: req.incidentId,
        remediationId: req.remediationId,
        approvalId: req.approvalId,
        decidedAt: now.toISOString(),
        actorType: req.actor.type,
        actorId: req.actor.id,
      },
      idempotencyKey: `${req.approvalId}:decision`,
    });
    await appendAudit(tx, {
      tenantId: req.tenantId,
      actorType: req.actor.type,
      actorId: req.actor.id,
      action: 'approval.responded',
      targetType: 'approval',
      targetId: req.approvalId,
      incidentId: req.incidentId,
      requestId: req.actor.requestId ?? null,
      workflowId: req.workflowId,
      historyEventId: req.historyEventId ?? null,
      details: { decision: req.decision, remediationId: req.remediationId, notes: req.notes ?? null },
      idempotencyKey: `${req.approvalId}:decision:audit`,
    });
  });
  const after = await read();
  if (after.status === 'expired') {
    throw ApplicationFailure.nonRetryable(
      `approval ${req.approvalId} expired (${after.expiredReason ?? 'deadline'})`,
      'ApprovalExpired',
    );
  }
  return answer(after);
}

/**
 * Why an approval ended unanswered: the workflow's own reasons, and `run_ended` for one whose
 * workflow run was terminated (or failed) while it waited (src/activities/remediation-orphans.ts).
 */
export type ExpiryRequest = Omit<Parameters<RemediationActivities['expireApproval']>[0], 'reason'> & {
  reason: Parameters<RemediationActivities['expireApproval']>[0]['reason'] | 'run_ended';
};

/** Marks a pending approval expired (the deadline, a supersede, the incident closed) and cancels its remediation. */
export async function expireApproval(ctx: RemediationContext, req: ExpiryRequest): Promise<boolean> {
  let expired = false;
  const { db, clock } = ctx;
  const now = clock();
  await db.transaction(async (tx) => {
    const [updated] = await tx
      .update(approvals)
      .set({ status: 'expired', expiredReason: req.reason })
      .where(
        and(eq(approvals.id, req.approvalId), eq(approvals.tenantId, req.tenantId), eq(approvals.status, 'pending')),
      )
      .returning({ id: approvals.id });
    if (!updated) return; // already expired, or decided first
    expired = true;
    // Issue 6: at expiry the remediation is cancelled; the approval's reason says why.
    const remediationStatus = 'cancelled';
    await tx
      .update(remediations)
      .set({ status: remediationStatus, updatedAt: now })
      .where(
        and(
          eq(remediations.id, req.remediationId),
          eq(remediations.tenantId, req.tenantId),
          eq(remediations.status, 'awaiting_approval'),
        ),
      );
    await skipPendingSteps(tx, req.tenantId, req.remediationId);
    await appendEvent(tx, {
      tenantId: req.tenantId,
      type: 'approval.expired',
      incidentId: req.incidentId,
      payload: {
        incidentId: req.incidentId,
        remediationId: req.remediationId,
        approvalId: req.approvalId,
        reason: req.reason,
      },
      idempotencyKey: `${req.approvalId}:expired`,
    });
    await appendAudit(tx, {
      tenantId: req.tenantId,
      actorType: 'system',
      actorId: 'workflow',
      action: 'approval.expired',
      targetType: 'approval',
      targetId: req.approvalId,
      incidentId: req.incidentId,
      workflowId: req.workflowId,
      historyEventId: req.historyEventId ?? null,
      details: { reason: req.reason, remediationId: req.remediationId, remediationStatus },
      idempotencyKey: `${req.approvalId}:expired:audit`,
    });
  });
  return expired;
}
