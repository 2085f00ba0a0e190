/**
 * Remediation: proposed after each conclusion, approved by an admin (or the system with
 * autoRemediation) before a durable deadline, then carried out step by step and verified.
 */
import { condition, log, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { OrphanedApprovalActivities } from '../../activities/remediation-orphans.js';
import type { ProposedRemediation } from '../../analysis/remediation-types.js';
import type { IncidentStatus } from '../../db/schema/incidents.js';
import type { Actor, ApprovalDecidedView, ApprovalResponse } from '../messages.js';
import { alreadyDecided, approvalExpired, approvalNotFound, failureReason, invalidDecision } from './failures.js';
import { remediation, remediationSteps } from './proxies.js';
import type { IncidentRecord } from './record.js';

/** A proposal awaiting its answer, and the answer once given (its record being written). */
type Approval = ProposedRemediation & { decision?: ApprovalResponse; decidedView?: Promise<ApprovalDecidedView> };

const system: Actor = { type: 'system', id: 'remediation' };

// Retried without limit like the other remediation bookkeeping (ADR 0165): a run's proposals wait for it.
const orphans = proxyActivities<OrphanedApprovalActivities>({
  summary: 'remediation: expire the approvals an ended run left pending',
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/**
 * A run started afresh on an incident that has moved before (not a continue-as-new, which ends
 * only with no approval waiting) follows a run that ended unfinished, terminated from the UI say:
 * the approvals it left pending have no timer any more (ADR 0284). A first run has none, and
 * neither has a reopen of a `closed` incident: the run that closed it expired them then.
 */
function followsAnEndedRun(record: IncidentRecord): boolean {
  return (
    !workflowInfo().continuedFromExecutionRunId &&
    record.state.version > 1 &&
    record.state.status !== 'closed' &&
    patched('orphaned-approvals-expire')
  );
}

/**
 * Moves the incident along the remediation only from where the remediation left it: a person
 * who moved it elsewhere in the meantime (PATCH) is never overridden.
 */
const remediationMoves: Partial<Record<IncidentStatus, IncidentStatus[]>> = {
  awaiting_approval: ['investigating'],
  remediating: ['awaiting_approval'],
  resolved: ['remediating'],
  investigating: ['awaiting_approval', 'remediating'],
};

export class Remediation {
  /** The investigation run whose conclusion asks for a remediation, until one is proposed. */
  private requested: number | null = null;
  /** A conclusion came while a proposal waits: is it still about the same evidence? */
  private evidenceMayHaveChanged = false;
  private task: Promise<void> | null = null;
  private pending: Approval | null = null;
  /** How each approval of this run ended, for answers that come late. */
  private readonly endedApprovals = new Map<string, 'expired' | 'superseded' | 'decided'>();
  /** Approvals an ended run left pending are to be expired before this run proposes any. */
  private orphansDue: boolean;

  constructor(private readonly record: IncidentRecord) {
    this.orphansDue = followsAnEndedRun(record);
  }

  /** A conclusion asks for a remediation; one awaiting approval is checked for stale evidence. */
  request(run: number): void {
    this.requested = run;
    this.evidenceMayHaveChanged = true;
  }

  /** Asked for, none running, and no close on its way. */
  due(): boolean {
    if (this.orphansDue) return !this.task;
    return this.requested !== null && !this.task && !this.record.closeRequested;
  }

  inFlight(): boolean {
    return this.task !== null;
  }

  awaitingDecision(): boolean {
    return this.pending !== null && !this.pending.decision;
  }

  /** The approval awaited, with its deadline (shown in the Temporal UI); null when none is. */
  awaitedApproval(): { approvalId: string; deadline: string } | null {
    return this.awaitingDecision() && this.pending
      ? { approvalId: this.pending.approvalId, deadline: this.pending.deadline }
      : null;
  }

  /** Runs beside the main loop: the approval may wait for an hour. */
  launch(): void {
    this.task = this.run().finally(() => {
      this.task = null;
    });
  }

  validateResponse(response: ApprovalResponse): void {
    const ended = this.endedApprovals.get(response?.approvalId);
    if (ended === 'superseded') throw approvalExpired('superseded');
    if (ended === 'expired') throw approvalExpired('deadline');
    if (ended === 'decided') throw alreadyDecided();
    if (!this.pending || this.pending.approvalId !== response?.approvalId) throw approvalNotFound();
    if (this.pending.decision) throw alreadyDecided();
    if (Date.now() >= Date.parse(this.pending.deadline)) throw approvalExpired('deadline');
    if (response.decision !== 'approve' && response.decision !== 'reject') throw invalidDecision();
  }

  async respond(response: ApprovalResponse): Promise<ApprovalDecidedView> {
    const approval = this.pending;
    // Checked again here: of two answers accepted together, the second finds the first.
    if (!approval || approval.approvalId !== response.approvalId || approval.decision) throw alreadyDecided();
    return this.decide(approval, response, response.notes);
  }

  private decide(
    approval: Approval,
    decision: ApprovalResponse,
    notes: string | undefined,
  ): Promise<ApprovalDecidedView> {
    approval.decision = decision;
    approval.decidedView = remediation.recordApprovalDecision({
      ...this.record.traced(),
      approvalId: approval.approvalId,
      remediationId: approval.remediationId,
      decision: decision.decision,
      actor: decision.actor,
      ...(notes !== undefined ? { notes } : {}),
    });
    return approval.decidedView;
  }

  private async moveTo(target: IncidentStatus): Promise<void> {
    await this.record.exclusive(async () => {
      if (remediationMoves[target]?.includes(this.record.state.status)) await this.record.transition(target, system);
    });
  }

  private async run(): Promise<void> {
    try {
      if (this.orphansDue) await this.expireOrphans();
      await this.proposeAndCarryOut();
    } catch (err) {
      await this.stopped(err);
    }
  }

  /**
   * The last resort when a remediation activity fails for good (a non-retryable failure: its
   * remediation, step or approval row gone). Left unhandled, the rejection would fail every
   * workflow task from then on, and the incident would answer nothing again; instead the
   * remediation ends as failed and the incident goes back to a human.
   */
  private async stopped(err: unknown): Promise<void> {
    log.error('remediation stopped', { incidentId: this.record.state.incidentId, error: failureReason(err) });
    if (this.pending) this.endedApprovals.set(this.pending.approvalId, this.pending.decision ? 'decided' : 'expired');
    this.endApproval();
    this.record.state.remediationStatus = 'failed';
    await this.moveTo('investigating');
  }

  /**
   * Expires what an ended run left pending; an incident still `awaiting_approval` for them goes
   * back under investigation, as at a deadline (open for a human).
   */
  private async expireOrphans(): Promise<void> {
    this.orphansDue = false;
    const expired = await orphans.expireOrphanedApprovals(this.record.traced());
    if (expired.length === 0) return;
    for (const approvalId of expired) this.endedApprovals.set(approvalId, 'expired');
    if (!this.pending) this.record.state.remediationStatus = 'cancelled';
    await this.moveTo('investigating');
  }

  private endApproval(): void {
    this.pending = null;
    this.record.state.pendingApprovalId = undefined;
  }

  private async proposeAndCarryOut(): Promise<void> {
    const { state } = this.record;
    /** This loop put the incident in `awaiting_approval` for an approval superseded since. */
    let superseded = false;
    while (this.requested !== null && !this.record.closeRequested) {
      const run = this.requested;
      this.requested = null;
      // Proposed while the incident is under investigation; not after a person moved it on.
      if (state.status !== 'investigating' && state.status !== 'awaiting_approval') return;
      this.evidenceMayHaveChanged = false;
      state.remediationProposals = (state.remediationProposals ?? 0) + 1;
      const proposed: Approval = await remediation.proposeRemediation({
        ...this.record.traced(),
        investigationRun: run,
        requestKey: `${workflowInfo().runId}:${state.remediationProposals}`,
      });
      // Nothing the service can execute: no approval, no wait; the incident stays under
      // investigation with its manual steps as recommended actions (ADR 0258). Proposed again
      // after a superseded approval, it waits on nothing any more: back under investigation
      // (a person who moved it to awaiting_approval themselves is left where they put it).
      if (proposed.steps === 0) {
        state.remediationStatus = proposed.manualSteps ? 'manual_only' : 'nothing_to_do';
        if (
          superseded &&
          this.record.status() === 'awaiting_approval' &&
          patched('manual-only-leaves-awaiting-approval')
        )
          await this.moveTo('investigating');
        return;
      }
      this.pending = proposed;
      state.pendingApprovalId = proposed.approvalId;
      state.remediationStatus = 'awaiting_approval';
      await this.moveTo('awaiting_approval');

      const decision = proposed.autoApprove ? this.grantedBySystem(proposed) : await this.awaitDecision(proposed, run);
      if (decision === 'superseded') {
        superseded = true;
        continue; // propose again on the new evidence
      }
      if (decision === 'ended') return;
      await this.carryOut(proposed, decision);
      return;
    }
  }

  private grantedBySystem(approval: Approval): ApprovalResponse {
    const decision: ApprovalResponse = {
      approvalId: approval.approvalId,
      decision: 'approve',
      actor: { type: 'system', id: 'auto-remediation' },
      notes: 'autoRemediation',
    };
    void this.decide(approval, decision, 'Granted by the system: the tenant enables autoRemediation');
    return decision;
  }

  /**
   * Waits for an admin's answer until the durable deadline (a timer in the workflow history,
   * kept across worker restarts). The approval ends unanswered when the incident is closed,
   * resolved or moved out of `awaiting_approval` by a person, whose decision an
   * approval must not act behind, and is superseded when newer evidence changed
   * the conclusion it was based on.
   */
  private async awaitDecision(approval: Approval, run: number): Promise<ApprovalResponse | 'superseded' | 'ended'> {
    const { record } = this;
    const resolvedMeanwhile = () => record.status() === 'resolved';
    const movedOnMeanwhile = () => record.status() !== 'awaiting_approval' && record.status() !== 'resolved';
    for (;;) {
      const remaining = Date.parse(approval.deadline) - Date.now();
      const woke =
        remaining > 0 &&
        (await condition(
          () =>
            approval.decision !== undefined ||
            record.closeRequested ||
            this.evidenceMayHaveChanged ||
            resolvedMeanwhile() ||
            movedOnMeanwhile(),
          remaining,
        ));
      if (!woke) break; // deadline
      if (approval.decision || record.closeRequested || resolvedMeanwhile() || movedOnMeanwhile()) break;
      // A re-synthesis happened while waiting: is the proposal still about the same evidence?
      this.evidenceMayHaveChanged = false;
      const hash = await remediation.evidenceHash(record.ids());
      if (hash !== approval.evidenceHash && !approval.decision) break;
      // Same evidence: the proposal stands. Changed evidence with a decision that came in
      // meanwhile: the decision is carried out, and the newer conclusion asks again after.
      if (hash === approval.evidenceHash) this.requested = null;
    }
    if (approval.decision) return approval.decision;
    const reason = record.closeRequested
      ? 'closed'
      : resolvedMeanwhile()
        ? 'resolved'
        : movedOnMeanwhile()
          ? 'status_changed'
          : Date.now() >= Date.parse(approval.deadline)
            ? 'deadline'
            : 'superseded';
    this.endedApprovals.set(approval.approvalId, reason === 'superseded' ? 'superseded' : 'expired');
    this.endApproval();
    await remediation.expireApproval({
      ...record.traced(),
      approvalId: approval.approvalId,
      remediationId: approval.remediationId,
      reason,
    });
    if (reason === 'superseded') {
      this.requested = this.requested ?? run;
      return 'superseded';
    }
    record.state.remediationStatus = 'cancelled';
    if (reason === 'deadline') await this.moveTo('investigating'); // open for a human
    return 'ended';
  }

  private async carryOut(approval: Approval, decision: ApprovalResponse): Promise<void> {
    const { record } = this;
    const { state } = record;
    await approval.decidedView;
    this.endedApprovals.set(approval.approvalId, 'decided');
    this.endApproval();
    if (decision.decision === 'reject') {
      state.remediationStatus = 'rejected';
      await this.moveTo('investigating');
      return;
    }

    state.remediationStatus = 'executing';
    await this.moveTo('remediating');
    const base = { remediationId: approval.remediationId };
    for (let index = 0; index < approval.steps; index++) {
      // A person who resolved, closed or moved the incident while the steps run (or alerts that
      // auto-resolved it) has taken it out of this remediation's hands: the steps not yet run
      // do not act behind that decision (ADR 0204).
      const now = record.status(); // read afresh: every await above may have let a person move it
      if (record.closeRequested || now !== 'remediating') {
        await remediation.completeRemediation({
          ...record.traced(),
          ...base,
          ok: false,
          detail: `Stopped before step ${index + 1} of ${approval.steps}: the incident was moved to ${now} meanwhile, so the remaining steps did not run`,
        });
        state.remediationStatus = 'failed';
        return; // the status it was moved to stands
      }
      const outcome = await remediationSteps.executeRemediationStep({ ...record.traced(), ...base, index });
      if (!outcome.ok) {
        await remediation.completeRemediation({
          ...record.traced(),
          ...base,
          ok: false,
          detail: `Step ${index + 1} failed: ${outcome.error ?? 'unknown error'}`,
        });
        state.remediationStatus = 'failed';
        await this.moveTo('investigating');
        return;
      }
    }
    const verified = await remediation.verifyRemediation({ ...record.ids(), ...base });
    await remediation.completeRemediation({ ...record.traced(), ...base, ok: verified.ok, detail: verified.detail });
    state.remediationStatus = verified.ok ? 'completed' : 'failed';
    await this.moveTo(verified.ok ? 'resolved' : 'investigating');
  }
}
