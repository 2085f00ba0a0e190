/**
 * Approvals left pending by a workflow run that ended without them: an SRE terminated (or a
 * failure ended) the incident's run while it waited, so no timer is left to expire them (ADR 0284).
 */
import { and, eq } from 'drizzle-orm';
import { approvals } from '../db/schema/remediation.js';
import { expireApproval } from './remediation/approval.js';
import type { RemediationContext } from './remediation/context.js';

export interface OrphanedApprovalRequest {
  incidentId: string;
  tenantId: string;
  workflowId: string;
  historyEventId?: number;
}

export interface OrphanedApprovalActivities {
  /**
   * Expires every approval of the incident still `pending`, with reason `run_ended`. Called by a
   * run that starts after another ended unfinished, before it proposes anything: no approval of
   * its own exists yet, so each pending one belongs to a run that can no longer answer it. Answers
   * the ids it expired.
   */
  expireOrphanedApprovals(req: OrphanedApprovalRequest): Promise<string[]>;
}

export async function expireOrphanedApprovals(
  ctx: RemediationContext,
  req: OrphanedApprovalRequest,
): Promise<string[]> {
  const pending = await ctx.db
    .select({ id: approvals.id, remediationId: approvals.remediationId })
    .from(approvals)
    .where(
      and(
        eq(approvals.tenantId, req.tenantId),
        eq(approvals.incidentId, req.incidentId),
        eq(approvals.status, 'pending'),
      ),
    );
  const expired: string[] = [];
  for (const approval of pending) {
    const done = await expireApproval(ctx, {
      ...req,
      approvalId: approval.id,
      remediationId: approval.remediationId,
      reason: 'run_ended',
    });
    if (done) expired.push(approval.id);
  }
  return expired;
}
