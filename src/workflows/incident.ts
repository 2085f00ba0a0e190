/**
 * One workflow per incident (workflow id = incidentId): the source of truth for its lifecycle.
 * Deterministic code only: all I/O happens in activities.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
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
import { agentRoles } from '../analysis/types.js';
import type { IncidentStatus } from '../db/schema/incidents.js';
import { isIncidentStatus, isTerminal } from './lifecycle.js';
import {
  alertsReceivedSignal,
  getStateQuery,
  investigationContextSignal,
  setStatusUpdate,
  startInvestigationUpdate,
  triageUpdate,
  type Actor,
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

// Triage calls a model (the built-in analyzer by default, or an LLM with its own timeout).
const analysis = proxyActivities<IncidentActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});

// Investigation bookkeeping (quota, rows, events): quick database writes.
const investigationLifecycle = proxyActivities<InvestigationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
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
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
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
      workflowId: workflowInfo().workflowId,
    });
    state.status = target;
    state.version = version;
    upsertSearchAttributes([{ key: IncidentStatusKey, value: target }]);
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
      workflowId: workflowInfo().workflowId,
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
          await beginInvestigation(request.actor, true).catch(() => undefined);
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

  async function beginInvestigation(actor: Actor, automatic: boolean): Promise<boolean> {
    state.investigationStarts = (state.investigationStarts ?? 0) + 1;
    const begun = await investigationLifecycle.beginInvestigation({
      incidentId: state.incidentId,
      tenantId: state.tenantId,
      actor,
      workflowId: workflowInfo().workflowId,
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
    try {
      await synthesis.synthesizeInvestigation({ ...request, reports: reports ?? [] });
      state.investigationStatus = 'completed';
      state.syntheses = (state.syntheses ?? 0) + 1;
    } catch (err) {
      state.investigationStatus = 'failed';
      await investigationLifecycle.recordInvestigationFailure({ ...request, reason: failureReason(err) });
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
      workflowId: workflowInfo().workflowId,
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
  // event ids seen by this run are remembered.
  const pendingAlerts: ReceivedAlert[] = [];
  const seenEventIds = new Set<string>();
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
    // Last status wins: every alert of the incident has recovered when the latest one says so.
    if (last.status === 'resolved' && autoResolve && state.status !== 'resolved' && state.status !== 'closed') {
      await transition('resolved', { type: 'system', id: 'auto-resolve' });
    }
  }

  // Automated incidents are triaged and investigated on their own right after creation (DESIGN §3).
  let autoTriaged = input.autoTriaged ?? false;
  if (input.source === 'automated' && input.status === 'open' && !autoTriaged && patched('auto-triage')) {
    autoTriaged = true;
    await exclusive(() => runTriage({ type: 'system', id: 'auto-triage' })).catch(() => undefined); // recorded as triage.failed
    if (patched('auto-investigate') && !pendingInvestigation && state.investigationStatus !== 'running') {
      await exclusive(() => beginInvestigation({ type: 'system', id: 'auto-investigate' }, true)).catch(() => undefined);
    }
  }

  for (;;) {
    await condition(
      () =>
        closeRequested ||
        pendingAlerts.length > 0 ||
        (pendingInvestigation !== null && !investigationTask) ||
        (!investigationTask && reports !== null && contextVersion > contextSynthesised) ||
        workflowInfo().continueAsNewSuggested,
    );
    if (pendingInvestigation && !investigationTask) {
      // Runs beside the loop, so alerts and status changes are handled while agents work.
      const started = pendingInvestigation;
      pendingInvestigation = null;
      investigationTask = runInvestigation(started).finally(() => {
        investigationTask = null;
      });
      continue;
    }
    if (pendingAlerts.length > 0) {
      await exclusive(processAlerts);
      continue;
    }
    if (!investigationTask && reports !== null && contextVersion > contextSynthesised && state.investigationRun) {
      // Human context after the investigation finished: re-synthesise with the same reports.
      await synthesise({ incidentId: state.incidentId, tenantId: state.tenantId, run: state.investigationRun, workflowId: workflowInfo().workflowId });
      continue;
    }
    await condition(() => allHandlersFinished() && !investigationTask);
    if (closeRequested && isTerminal(state.status)) return state;
    closeRequested = false;
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof incidentWorkflow>({
        ...input,
        status: state.status,
        severity: state.severity,
        version: state.version,
        autoTriaged,
      });
    }
  }
}
