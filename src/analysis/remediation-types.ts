/**
 * The contract between the incident workflow and the remediation activities (issue 6).
 * After an investigation completes, the workflow calls `proposeRemediation`; then it waits for a
 * decision (the respond Update) or the deadline (a durable timer), and records the outcome with
 * `recordApprovalDecision` / `expireApproval`; an approved remediation runs `executeRemediationStep`
 * for each step in order, then `verifyRemediation`, then `completeRemediation`.
 */
import type { Actor } from '../workflows/messages.js';

export interface ProposeRemediationRequest {
  incidentId: string;
  tenantId: string;
  investigationRun: number;
  workflowId: string;
  /** The workflow task that decided this write (for the audit entry). */
  historyEventId?: number;
  /** Unique per proposal in this workflow run (run id and counter): a retry reuses it. */
  requestKey: string;
}

export interface ProposedRemediation {
  remediationId: string;
  approvalId: string;
  /** ISO 8601; `approvalTimeoutMinutes` (tenant setting, default 60) after the proposal. */
  deadline: string;
  /** The tenant's `autoRemediation` setting at proposal time. */
  autoApprove: boolean;
  evidenceHash: string;
  /**
   * Steps to approve and run. 0 when the plan has none the service can execute: then nothing was
   * proposed (no approval; the ids, deadline and hash are empty) (ADR 0258).
   */
  steps: number;
  /** With `steps: 0`, the manual steps left to people as the incident's recommended actions. */
  manualSteps?: number;
}

export type ApprovalDecision = 'approve' | 'reject';

export interface ApprovalDecisionRecord {
  incidentId: string;
  tenantId: string;
  approvalId: string;
  remediationId: string;
  decision: ApprovalDecision;
  actor: Actor;
  notes?: string;
  workflowId: string;
  /** The workflow task that decided this write (for the audit entry). */
  historyEventId?: number;
}

export interface ApprovalDecided {
  approvalId: string;
  decision: ApprovalDecision;
  remediationId: string;
  remediationStatus: string;
  decidedAt: string;
}

export interface StepRequest {
  incidentId: string;
  tenantId: string;
  remediationId: string;
  index: number;
  workflowId: string;
  /** The workflow task that decided this write (for the audit entry). */
  historyEventId?: number;
}

export interface StepOutcome {
  index: number;
  ok: boolean;
  output?: unknown;
  error?: string;
}

export interface RemediationActivities {
  proposeRemediation(req: ProposeRemediationRequest): Promise<ProposedRemediation>;
  recordApprovalDecision(req: ApprovalDecisionRecord): Promise<ApprovalDecided>;
  /**
   * Marks the approval expired (reason: the deadline, superseded by a proposal on newer evidence,
   * or the incident closed or resolved while it waited) and the remediation `cancelled`.
   */
  expireApproval(req: {
    incidentId: string;
    tenantId: string;
    approvalId: string;
    remediationId: string;
    reason: 'deadline' | 'superseded' | 'closed' | 'resolved' | 'status_changed';
    workflowId: string;
    historyEventId?: number;
  }): Promise<void>;
  /** Runs one step exactly once (idempotency key per step); a failure is an outcome, not a throw. */
  executeRemediationStep(req: StepRequest): Promise<StepOutcome>;
  /** Whether the remediation worked: the incident's alerts have recovered, or a step-defined check passed. */
  verifyRemediation(req: {
    incidentId: string;
    tenantId: string;
    remediationId: string;
  }): Promise<{ ok: boolean; detail: string }>;
  /** Records completed (`remediation.completed`) or failed (`remediation.failed` + the failure as evidence). */
  completeRemediation(req: {
    incidentId: string;
    tenantId: string;
    remediationId: string;
    ok: boolean;
    detail: string;
    workflowId: string;
    historyEventId?: number;
  }): Promise<void>;
  /** The current evidence hash of the incident (to detect stale proposals). */
  evidenceHash(req: { incidentId: string; tenantId: string }): Promise<string>;
}
