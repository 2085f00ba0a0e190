/**
 * One workflow per incident (workflow id = incidentId): the source of truth for its lifecycle.
 * Deterministic code only: all I/O happens in activities.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { IncidentActivities } from '../activities/index.js';
import {
  agentActivityNames,
  type AgentReport,
  type InvestigationActivities,
  type InvestigationRequest,
} from '../analysis/investigation-types.js';
import type { ProposedRemediation, RemediationActivities } from '../analysis/remediation-types.js';
import { agentRoles } from '../analysis/types.js';
import type { IncidentStatus } from '../db/schema/incidents.js';
import { isIncidentStatus, isTerminal } from './lifecycle.js';
import {
  alertsReceivedSignal,
  SEEN_EVENT_IDS_CARRIED,
  getStateQuery,
  investigationContextSignal,
  respondToApprovalUpdate,
  setStatusUpdate,
  startInvestigationUpdate,
  triageUpdate,
  type Actor,
  type ApprovalDecidedView,
  type ApprovalResponse,
  type InvestigationStarted,
  type ReceivedAlert,
  type IncidentView,
  type IncidentWorkflowInput,
  type IncidentWorkflowState,
  type SetStatusRequest,
  type TriageClassificationView,
} from './messages.js';
import { IncidentStatusKey, SeverityKey } from './search-attributes.js';

// Projection writes must land eventually: retry without limit, backing off to a minute.
const projections = proxyActivities<IncidentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

// An activity that waits on a model or a skill heartbeats while it waits (decision 206): a
// worker that dies is noticed after this long, not after the whole start-to-close timeout.
const WAITING_HEARTBEAT_TIMEOUT = '15 seconds';

// Triage calls a model (the built-in analyzer by default, or an LLM with its own timeout).
const analysis = proxyActivities<IncidentActivities>({
  startToCloseTimeout: '60 seconds',
  heartbeatTimeout: WAITING_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});

// Investigation bookkeeping (quota, rows, events): quick database writes. A start gives up
// after ten attempts (its caller is answered); recording a failure, which nobody waits on, must
// land eventually, like a projection.
const investigationLifecycle = proxyActivities<InvestigationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});
const investigationRecords = proxyActivities<InvestigationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
// Specialist agents run in parallel; each heartbeats, so a dead worker is noticed in 20 s.
const agents = proxyActivities<InvestigationActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});
// Synthesis may call a model with its own timeout, and falls back to the built-in analyzer.
const synthesis = proxyActivities<InvestigationActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WAITING_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});

// Pattern learning on resolution: quick database writes; a failure is logged by Temporal and the
// resolution stands (learning never fails the incident).
const learning = proxyActivities<IncidentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
});

// Remediation bookkeeping and steps. A step runs its action once (idempotency key per step), so
// retrying the activity is safe; a step's own failure is an outcome, not a thrown error. They
// retry without limit: a database outage longer than a few minutes must delay a remediation, not
// end it halfway (decision 165).
const remediationRetry = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' } as const;
const remediation = proxyActivities<RemediationActivities>({ startToCloseTimeout: '2 minutes', retry: remediationRetry });
// A step may call a skill, and heartbeats while it runs.
const remediationSteps = proxyActivities<RemediationActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WAITING_HEARTBEAT_TIMEOUT,
  retry: remediationRetry,
});

const failureReason = (err: unknown): string =>
  err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);

/** Runs async sections one at a time so concurrent updates never interleave their writes. */
function createMutex(): <T>(section: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(section: () => Promise<T>): Promise<T> => {
    const result = tail.then(section, section);
    tail = result.catch(() => undefined);
    return result;
  };
}

export async function incidentWorkflow(input: IncidentWorkflowInput): Promise<IncidentWorkflowState> {
  const state: IncidentWorkflowState = {
    incidentId: input.incidentId,
    tenantId: input.tenantId,
    status: input.status,
    severity: input.severity,
    version: input.version,
  };
  // A run that starts from a stored `closed` state is a reopen: it lives until an update moves it.
  let closeRequested = false;
  const exclusive = createMutex();

  setHandler(getStateQuery, () => ({ ...state }));

  /** Moves the incident to `target` (projection first, then the workflow's own state). */
  async function transition(target: IncidentStatus, actor: Actor): Promise<IncidentView> {
    if (target === state.status) {
      return projections.readIncident({ incidentId: state.incidentId, tenantId: state.tenantId });
    }
    const version = state.version + 1;
    const view = await projections.projectStatusChange({
      incidentId: state.incidentId,
      tenantId: state.tenantId,
      from: state.status,
      to: target,
      version,
      actor,
      workflowId: workflowInfo().workflowId, historyEventId: workflowInfo().historyLength,
    });
    state.status = target;
    state.version = version;
    upsertSearchAttributes([{ key: IncidentStatusKey, value: target }]);
    // Resolving learns its pattern (DESIGN §3), before the update answers: read-your-writes.
    if (target === 'resolved' && patched('learn-patterns')) {
      await learning
        .learnFromResolution({ incidentId: state.incidentId, tenantId: state.tenantId, workflowId: workflowInfo().workflowId, historyEventId: workflowInfo().historyLength })
        .catch(() => undefined);
    }
    return view;
  }

  /**
   * Triage: moves an open incident to `triaging`, classifies it (activity), and takes the
   * priority as the incident's severity. A failure is recorded (`triage.failed`) and rethrown.
   */
  async function runTriage(actor: Actor): Promise<TriageClassificationView> {
    if (state.status === 'open') await transition('triaging', actor);
    state.triageRuns = (state.triageRuns ?? 0) + 1;
    const request = {
      incidentId: state.incidentId,
      tenantId: state.tenantId,
      requestKey: `${workflowInfo().runId}:${state.triageRuns}`,
      actor,
      workflowId: workflowInfo().workflowId, historyEventId: workflowInfo().historyLength,
    };
    let outcome;
    try {
      outcome = await analysis.triageIncident(request);
    } catch (err) {
      const reason = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
      await projections.recordTriageFailure({ ...request, reason });
      throw ApplicationFailure.nonRetryable(`Triage failed: ${reason}`, 'TriageFailed');
    }
    if (outcome.priority !== state.severity) {
      state.severity = outcome.priority;
      upsertSearchAttributes([{ key: SeverityKey, value: outcome.priority }]);
    }
    state.triagePriority = outcome.priority;
    return {
      incidentId: outcome.incidentId,
      priority: outcome.priority,
      summary: outcome.summary,
      confidence: outcome.confidence,
      suggestedAgents: outcome.suggestedAgents,
    };
  }

  setHandler(
    setStatusUpdate,
    (request: SetStatusRequest): Promise<IncidentView> =>
      exclusive(async () => {
        const from = state.status;
        const view = await transition(request.status, request.actor);
        if (isTerminal(request.status)) closeRequested = true;
        // Moving to `triaging` runs triage (DESIGN §3); a failure is recorded, the move stands.
        if (request.status === 'triaging' && from !== 'triaging' && patched('triage-on-status')) {
          try {
            await runTriage(request.actor);
          } catch {
            // triage.failed is recorded; the status change stands
          }
          return projections.readIncident({ incidentId: state.incidentId, tenantId: state.tenantId });
        }
        // Moving to `investigating` starts an investigation unless one runs (quota permitting).
        if (request.status === 'investigating' && from !== 'investigating' && state.investigationStatus !== 'running' && !pendingInvestigation && patched('investigate-on-status')) {
          const begun = await beginInvestigation(request.actor, true).catch(() => false);
          // The start cleared the previous conclusion: answer what a read now shows.
          if (begun && patched('view-after-investigation-start')) return projections.readIncident({ incidentId: state.incidentId, tenantId: state.tenantId });
        }
        return view;
      }),
    {
      validator: (request: SetStatusRequest) => {
        if (!isIncidentStatus(request?.status)) {
          throw new Error(`invalid status: ${String(request?.status)}`);
        }
      },
    },
  );

  // Investigation: started by an update (or on its own for automated incidents), run by the
  // main loop so the update answers at once; human context re-synthesises it.
  let investigationRequested = false;
  let pendingInvestigation: { run: number; triaged: boolean; actor: Actor } | null = null;
  let reports: AgentReport[] | null = null;
  let contextVersion = 0;
  let contextSynthesised = 0;
  let investigationTask: Promise<void> | null = null;

  /**
   * Begins a run, under the mutex (every caller holds it). What the callers checked before they
   * waited for the mutex can be stale by now: an automatic start after triage, a PATCH to
   * `investigating` and a POST can each pass their check while another start is in flight, and
   * two starts charged the quota twice for one investigation (decision 169). So it is checked
   * again here; a second start is refused as already running.
   */
  async function beginInvestigation(actor: Actor, automatic: boolean): Promise<boolean> {
    if ((pendingInvestigation !== null || state.investigationStatus === 'running') && patched('begin-investigation-once')) {
      throw ApplicationFailure.nonRetryable('An investigation is already running for this incident', 'InvestigationRunning');
    }
    state.investigationStarts = (state.investigationStarts ?? 0) + 1;
    const begun = await investigationLifecycle.beginInvestigation({
      incidentId: state.incidentId,
      tenantId: state.tenantId,
      actor,
      workflowId: workflowInfo().workflowId, historyEventId: workflowInfo().historyLength,
      requestKey: `${workflowInfo().runId}:${state.investigationStarts}`,
      automatic,
    });
    if (begun.run === null) return false;
    pendingInvestigation = { run: begun.run, triaged: begun.triaged, actor };
    state.investigationRun = begun.run;
    state.investigationStatus = 'running';
    state.syntheses = 0;
    reports = null;
    return true;
  }

  async function synthesise(request: InvestigationRequest): Promise<void> {
    const seen = contextVersion;
    /**
     * A newer run began while this (re-)synthesis of an older one ran (a re-synthesis is not
     * under the lock): its outcome is not the incident's any more (its write, keyed by run, did
     * nothing), and taking it would mark the new run completed and propose a remediation from
     * the old conclusion (decision 202).
     */
    const superseded = () => request.run !== state.investigationRun && patched('drop-superseded-synthesis');
    try {
      await synthesis.synthesizeInvestigation({ ...request, reports: reports ?? [], ...(state.alertsReceived ? { alertsSeen: state.alertsReceived } : {}) });
      if (superseded()) {
        contextSynthesised = seen; // the newer run reads every context stored so far
        return;
      }
      state.investigationStatus = 'completed';
      state.syntheses = (state.syntheses ?? 0) + 1;
      // A conclusion asks for a remediation; one awaiting approval is checked for stale evidence.
      if (patched('remediation')) {
        remediationRequested = request.run;
        evidenceMayHaveChanged = true;
      }
    } catch (err) {
      if (superseded()) {
        contextSynthesised = seen;
        return;
      }
      state.investigationStatus = 'failed';
      await investigationRecords.recordInvestigationFailure({ ...request, reason: failureReason(err) });
    }
    contextSynthesised = seen;
  }

  async function runInvestigation(started: { run: number; triaged: boolean; actor: Actor }): Promise<void> {
    if (!started.triaged && (state.triageRuns ?? 0) === 0) {
      await exclusive(() => runTriage(started.actor)).catch(() => undefined); // recorded as triage.failed
    }
    await exclusive(async () => {
      if (state.status === 'open' || state.status === 'triaging') await transition('investigating', started.actor);
    });
    const request: InvestigationRequest = {
      incidentId: state.incidentId,
      tenantId: state.tenantId,
      run: started.run,
      workflowId: workflowInfo().workflowId, historyEventId: workflowInfo().historyLength,
    };
    // One agent failing costs its evidence, not the investigation.
    reports = await Promise.all(
      agentRoles.map((role) =>
        agents[agentActivityNames[role]](request).catch(
          (err: unknown): AgentReport => ({ agentRole: role, content: `The ${role} agent failed: ${failureReason(err)}`, evidenceIds: [], found: false }),
        ),
      ),
    );
    await synthesise(request);
  }

  setHandler(
    startInvestigationUpdate,
    async ({ actor }): Promise<InvestigationStarted> => {
      if (investigationRequested || state.investigationStatus === 'running') {
        throw ApplicationFailure.nonRetryable('An investigation is already running for this incident', 'InvestigationRunning');
      }
      investigationRequested = true;
      try {
        const begun = await exclusive(() => beginInvestigation(actor, false));
        if (!begun) throw ApplicationFailure.nonRetryable('The monthly investigation quota is used up', 'QuotaExceeded');
      } finally {
        investigationRequested = false;
      }
      return { incidentId: state.incidentId, status: 'investigating' };
    },
    {
      validator: (command) => {
        if (!command?.actor?.id) throw new Error('an actor is required');
        if (isTerminal(state.status)) throw new Error('a closed incident is not investigated; reopen it first');
      },
    },
  );

  // Remediation: proposed after each conclusion, approved by an admin (or the system with
  // autoRemediation) before a durable deadline, then executed step by step.
  let remediationRequested: number | null = null;
  let evidenceMayHaveChanged = false;
  let remediationTask: Promise<void> | null = null;
  let pending: (ProposedRemediation & { decision?: ApprovalResponse; decidedView?: Promise<ApprovalDecidedView> }) | null = null;
  /** How each approval of this run ended, for answers that come late. */
  const endedApprovals = new Map<string, 'expired' | 'superseded' | 'decided'>();

  const remediationBase = () => ({ incidentId: state.incidentId, tenantId: state.tenantId, workflowId: workflowInfo().workflowId, historyEventId: workflowInfo().historyLength });
  const system: Actor = { type: 'system', id: 'remediation' };

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
  /** The status now, unnarrowed (a status check before an await says nothing after it). */
  const statusNow = (): IncidentStatus => state.status;

  async function moveTo(target: IncidentStatus): Promise<void> {
    await exclusive(async () => {
      if (remediationMoves[target]?.includes(state.status)) await transition(target, system);
    });
  }

  async function runRemediation(): Promise<void> {
    try {
      await proposeAndCarryOut();
    } catch (err) {
      await remediationStopped(err);
    } finally {
      // The request this remediation consumed was cleared when it was taken. One made while it
      // ran (a conclusion on new context, a new investigation) is kept: it is proposed once the
      // incident is back under investigation. Cleared here, it was lost (decision 202).
      if (!patched('keep-later-remediation-request')) remediationRequested = null;
    }
  }

  /**
   * The last resort when a remediation activity fails for good (a non-retryable failure: its
   * remediation, step or approval row gone). Left unhandled, the rejection would fail every
   * workflow task from then on, and the incident would answer nothing again; instead the
   * remediation ends as failed and the incident goes back to a human (decision 165).
   */
  async function remediationStopped(err: unknown): Promise<void> {
    log.error('remediation stopped', { incidentId: state.incidentId, error: failureReason(err) });
    if (pending) endedApprovals.set(pending.approvalId, pending.decision ? 'decided' : 'expired');
    pending = null;
    state.pendingApprovalId = undefined;
    state.remediationStatus = 'failed';
    await moveTo('investigating');
  }

  async function proposeAndCarryOut(): Promise<void> {
    while (remediationRequested !== null && !closeRequested) {
      const run = remediationRequested;
      remediationRequested = null;
      // Proposed while the incident is under investigation; not after a person moved it on.
      if (state.status !== 'investigating' && state.status !== 'awaiting_approval') return;
      evidenceMayHaveChanged = false;
      state.remediationProposals = (state.remediationProposals ?? 0) + 1;
      const proposed = await remediation.proposeRemediation({
        ...remediationBase(),
        investigationRun: run,
        requestKey: `${workflowInfo().runId}:${state.remediationProposals}`,
      });
      if (proposed.steps === 0) {
        state.remediationStatus = 'nothing_to_do';
        return;
      }
      pending = proposed;
      state.pendingApprovalId = proposed.approvalId;
      state.remediationStatus = 'awaiting_approval';
      await moveTo('awaiting_approval');

      if (proposed.autoApprove) {
        pending.decision = { approvalId: proposed.approvalId, decision: 'approve', actor: { type: 'system', id: 'auto-remediation' }, notes: 'autoRemediation' };
        pending.decidedView = remediation.recordApprovalDecision({
          ...remediationBase(),
          approvalId: proposed.approvalId,
          remediationId: proposed.remediationId,
          decision: 'approve',
          actor: pending.decision.actor,
          notes: 'Granted by the system: the tenant enables autoRemediation',
        });
      } else {
        // A resolved incident needs no remediation: its pending approval ends (decision 174).
        // Nor does one a person has moved out of `awaiting_approval` (back to open, say):
        // approving it must not act behind their decision (decision 195).
        const resolutionEnds = patched('resolution-ends-approval');
        const movedOnEnds = patched('status-change-ends-approval');
        const resolvedMeanwhile = () => resolutionEnds && state.status === 'resolved';
        const movedOnMeanwhile = () => movedOnEnds && state.status !== 'awaiting_approval' && state.status !== 'resolved';
        // The durable deadline: a timer in the workflow history, kept across worker restarts.
        for (;;) {
          const remaining = Date.parse(proposed.deadline) - Date.now();
          const woke =
            remaining > 0 &&
            (await condition(() => pending?.decision !== undefined || closeRequested || evidenceMayHaveChanged || resolvedMeanwhile() || movedOnMeanwhile(), remaining));
          if (!woke) break; // deadline
          if (pending?.decision || closeRequested || resolvedMeanwhile() || movedOnMeanwhile()) break;
          // A re-synthesis happened while waiting: is the proposal still about the same evidence?
          evidenceMayHaveChanged = false;
          const hash = await remediation.evidenceHash({ incidentId: state.incidentId, tenantId: state.tenantId });
          if (hash !== proposed.evidenceHash && !pending?.decision) break;
          // Same evidence: the proposal stands. Changed evidence with a decision that came in
          // meanwhile: the decision is carried out, and the newer conclusion asks again after.
          if (hash === proposed.evidenceHash || !patched('keep-later-remediation-request')) remediationRequested = null;
        }
        if (!pending?.decision) {
          const reason = closeRequested
            ? 'closed'
            : resolvedMeanwhile()
              ? 'resolved'
              : movedOnMeanwhile()
                ? 'status_changed'
                : Date.now() >= Date.parse(proposed.deadline)
                  ? 'deadline'
                  : 'superseded';
          endedApprovals.set(proposed.approvalId, reason === 'superseded' ? 'superseded' : 'expired');
          pending = null;
          state.pendingApprovalId = undefined;
          await remediation.expireApproval({ ...remediationBase(), approvalId: proposed.approvalId, remediationId: proposed.remediationId, reason });
          if (reason === 'superseded') {
            remediationRequested = remediationRequested ?? run; // propose again on the new evidence
            continue;
          }
          state.remediationStatus = 'cancelled';
          if (reason === 'deadline') await moveTo('investigating'); // open for a human
          return;
        }
      }

      const decision = pending.decision!;
      await pending.decidedView;
      endedApprovals.set(proposed.approvalId, 'decided');
      pending = null;
      state.pendingApprovalId = undefined;
      if (decision.decision === 'reject') {
        state.remediationStatus = 'rejected';
        await moveTo('investigating');
        return;
      }

      state.remediationStatus = 'executing';
      await moveTo('remediating');
      for (let index = 0; index < proposed.steps; index++) {
        // A person who resolved, closed or moved the incident while the steps run (or alerts that
        // auto-resolved it) has taken it out of this remediation's hands: the steps not yet run
        // do not act behind that decision (decision 204).
        const now = statusNow(); // read afresh: every await above may have let a person move it
        if ((closeRequested || now !== 'remediating') && patched('stop-steps-when-moved')) {
          await remediation.completeRemediation({
            ...remediationBase(),
            remediationId: proposed.remediationId,
            ok: false,
            detail: `Stopped before step ${index + 1} of ${proposed.steps}: the incident was moved to ${now} meanwhile, so the remaining steps did not run`,
          });
          state.remediationStatus = 'failed';
          return; // the status it was moved to stands
        }
        const outcome = await remediationSteps.executeRemediationStep({ ...remediationBase(), remediationId: proposed.remediationId, index });
        if (!outcome.ok) {
          await remediation.completeRemediation({ ...remediationBase(), remediationId: proposed.remediationId, ok: false, detail: `Step ${index + 1} failed: ${outcome.error ?? 'unknown error'}` });
          state.remediationStatus = 'failed';
          await moveTo('investigating');
          return;
        }
      }
      const verified = await remediation.verifyRemediation({ incidentId: state.incidentId, tenantId: state.tenantId, remediationId: proposed.remediationId });
      await remediation.completeRemediation({ ...remediationBase(), remediationId: proposed.remediationId, ok: verified.ok, detail: verified.detail });
      state.remediationStatus = verified.ok ? 'completed' : 'failed';
      await moveTo(verified.ok ? 'resolved' : 'investigating');
      return;
    }
  }

  setHandler(
    respondToApprovalUpdate,
    async (response): Promise<ApprovalDecidedView> => {
      // Checked again here: of two answers accepted together, the second finds the first.
      if (!pending || pending.approvalId !== response.approvalId || pending.decision) {
        throw ApplicationFailure.nonRetryable('already_decided: this approval has already been answered', 'AlreadyDecided');
      }
      pending.decision = response;
      pending.decidedView = remediation.recordApprovalDecision({
        ...remediationBase(),
        approvalId: pending.approvalId,
        remediationId: pending.remediationId,
        decision: response.decision,
        actor: response.actor,
        ...(response.notes !== undefined ? { notes: response.notes } : {}),
      });
      return pending.decidedView;
    },
    {
      validator: (response) => {
        const ended = endedApprovals.get(response?.approvalId);
        if (ended === 'superseded') throw new Error('approval_expired: this approval was superseded by a proposal on newer evidence');
        if (ended === 'expired') throw new Error('approval_expired: the approval deadline has passed');
        if (ended === 'decided') throw new Error('already_decided: this approval has already been answered');
        if (!pending || pending.approvalId !== response?.approvalId) throw new Error('approval_not_found: no pending approval with that id');
        if (pending.decision) throw new Error('already_decided: this approval has already been answered');
        if (Date.now() >= Date.parse(pending.deadline)) throw new Error('approval_expired: the approval deadline has passed');
        if (response.decision !== 'approve' && response.decision !== 'reject') throw new Error('validation_error: decision must be approve or reject');
      },
    },
  );

  setHandler(investigationContextSignal, () => {
    contextVersion++;
  });

  setHandler(triageUpdate, ({ actor }) => exclusive(() => runTriage(actor)), {
    validator: (command) => {
      if (!command?.actor?.id) throw new Error('an actor is required');
      if (isTerminal(state.status)) throw new Error('a closed incident is not triaged; reopen it first');
    },
  });

  // Alerts that attached after opening. The dispatcher may deliver one twice (at-least-once), so
  // event ids seen are remembered, the latest of them across a continue-as-new (a Set keeps
  // insertion order, so its tail is the most recent).
  const pendingAlerts: ReceivedAlert[] = [];
  const seenEventIds = new Set<string>(input.seenEventIds ?? []);
  let autoResolve = false;
  setHandler(alertsReceivedSignal, ({ alerts, autoResolve: enabled }) => {
    autoResolve = enabled;
    for (const alert of alerts) {
      if (seenEventIds.has(alert.eventId)) continue;
      seenEventIds.add(alert.eventId);
      pendingAlerts.push(alert);
    }
  });

  async function processAlerts(): Promise<void> {
    const batch = pendingAlerts.splice(0, pendingAlerts.length);
    const last = batch.at(-1);
    if (!last) return;
    state.alertsReceived = (state.alertsReceived ?? 0) + batch.length;
    state.lastAlertStatus = last.status;
    // New evidence while a proposal awaits its decision: re-synthesise, which supersedes the
    // approval when the conclusion it was based on changed.
    if (pending && !pending.decision && reports !== null) contextVersion++;
    // Last status wins: every alert of the incident has recovered when the latest one says so.
    if (last.status === 'resolved' && autoResolve && state.status !== 'resolved' && state.status !== 'closed') {
      await transition('resolved', { type: 'system', id: 'auto-resolve' });
    }
  }

  // Automated incidents are triaged and investigated on their own right after creation (DESIGN §3).
  let autoTriaged = input.autoTriaged ?? false;
  if (input.source === 'automated' && input.status === 'open' && !autoTriaged && patched('auto-triage')) {
    autoTriaged = true;
    // A person may have resolved or closed the incident first (an update that started this
    // run, or one that got the lock before these steps did): it is then neither triaged nor
    // investigated, as a person asking for either on a closed incident is refused.
    const skipSettled = patched('auto-steps-skip-settled');
    const settled = () => skipSettled && (closeRequested || state.status === 'resolved' || state.status === 'closed');
    await exclusive(async () => {
      if (!settled()) await runTriage({ type: 'system', id: 'auto-triage' });
    }).catch(() => undefined); // recorded as triage.failed
    if (patched('auto-investigate') && !pendingInvestigation && state.investigationStatus !== 'running') {
      await exclusive(async () => (settled() ? false : beginInvestigation({ type: 'system', id: 'auto-investigate' }, true))).catch(() => undefined);
    }
  }

  // The main loop's branches, each as the condition it runs on; `hasWork` is any of them, so a
  // wake on it always leads to a branch that changes it.
  const remediationDue = () => remediationRequested !== null && !remediationTask && !investigationTask && !closeRequested;
  const investigationDue = () => pendingInvestigation !== null && !investigationTask;
  /** Human context after the run's own investigation finished: re-synthesise with its reports. */
  const resynthesisDue = () => !investigationTask && reports !== null && contextVersion > contextSynthesised && Boolean(state.investigationRun);
  /**
   * Human context in a run that did not run the agents itself (a reopened incident, a run
   * continued as new): its investigation is the stored one, re-synthesised from its stored
   * findings. It used to be ignored while the api answered `resynthesis: true` (decision 181).
   */
  const contextForStoredInvestigation = () =>
    !investigationTask && pendingInvestigation === null && reports === null && contextVersion > contextSynthesised;
  const hasWork = () => remediationDue() || investigationDue() || pendingAlerts.length > 0 || resynthesisDue() || contextForStoredInvestigation();
  const resynthesise = (run: number) =>
    synthesise({ incidentId: state.incidentId, tenantId: state.tenantId, run, workflowId: workflowInfo().workflowId, historyEventId: workflowInfo().historyLength });

  for (;;) {
    await condition(() => closeRequested || hasWork() || workflowInfo().continueAsNewSuggested);
    if (remediationDue()) {
      remediationTask = runRemediation().finally(() => {
        remediationTask = null;
      });
      continue;
    }
    if (investigationDue()) {
      // Runs beside the loop, so alerts and status changes are handled while agents work.
      const started = pendingInvestigation!;
      pendingInvestigation = null;
      investigationTask = runInvestigation(started)
        .catch((err: unknown) => {
          // Only a non-retryable failure gets here (every write it makes retries without limit):
          // never an unhandled rejection, which would fail every workflow task from then on.
          log.error('investigation stopped', { incidentId: state.incidentId, run: started.run, error: failureReason(err) });
          state.investigationStatus = 'failed';
        })
        .finally(() => {
          investigationTask = null;
        });
      continue;
    }
    if (pendingAlerts.length > 0) {
      await exclusive(processAlerts);
      continue;
    }
    if (resynthesisDue()) {
      await resynthesise(state.investigationRun!);
      continue;
    }
    if (contextForStoredInvestigation()) {
      // Decided here, when it first matters, so runs without such context record no marker;
      // a history from before it records nothing here either (waking alone adds no command).
      const seen = contextVersion;
      if (patched('context-without-reports')) {
        const stored = state.investigationRun === undefined ? await investigationRecords.latestInvestigation({ incidentId: state.incidentId, tenantId: state.tenantId }) : null;
        // A run begun while the stored one was read is the incident's now (decision 202).
        const begunMeanwhile = stored !== null && state.investigationRun !== undefined && patched('drop-superseded-synthesis');
        if (stored && stored.status !== 'running' && !begunMeanwhile) {
          state.investigationRun = stored.run;
          state.investigationStatus = stored.status === 'failed' ? 'failed' : 'completed';
        }
        if (state.investigationRun !== undefined && state.investigationStatus !== 'running') await resynthesise(state.investigationRun);
      }
      contextSynthesised = Math.max(contextSynthesised, seen); // nothing stored to re-synthesise: the context waits for the next run
      continue;
    }
    // Before ending the run (closed, or continued as new), the tasks finish; work that arrives
    // meanwhile (an alert while an approval waits, a begun investigation, a conclusion's
    // remediation request) is done first: continuing as new used to drop it (decision 170).
    const drainFirst = patched('drain-before-continue-as-new');
    await condition(() => (drainFirst && hasWork()) || (allHandlersFinished() && !investigationTask && !remediationTask));
    if (drainFirst && hasWork()) continue;
    if (closeRequested && isTerminal(state.status)) return state;
    const reopened = closeRequested;
    closeRequested = false;
    // Reopened while the close drained: work held back by the close (a conclusion's remediation
    // request) is due again, and continuing as new now would drop it (decision 205).
    if (reopened && hasWork() && patched('work-after-reopen')) continue;
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof incidentWorkflow>({
        ...input,
        status: state.status,
        severity: state.severity,
        version: state.version,
        autoTriaged,
        ...(seenEventIds.size > 0 && patched('carry-seen-event-ids') ? { seenEventIds: [...seenEventIds].slice(-SEEN_EVENT_IDS_CARRIED) } : {}),
      });
    }
  }
}
