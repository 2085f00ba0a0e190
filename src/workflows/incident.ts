/**
 * One workflow per incident (workflow id = incidentId): the source of truth for its lifecycle.
 * Deterministic code only: all I/O happens in activities.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { IncidentActivities } from '../activities/index.js';
import type { IncidentStatus } from '../db/schema/incidents.js';
import { isIncidentStatus, isTerminal } from './lifecycle.js';
import {
  alertsReceivedSignal,
  getStateQuery,
  setStatusUpdate,
  type Actor,
  type ReceivedAlert,
  type IncidentView,
  type IncidentWorkflowInput,
  type IncidentWorkflowState,
  type SetStatusRequest,
} from './messages.js';
import { IncidentStatusKey } from './search-attributes.js';

// Projection writes must land eventually: retry without limit, backing off to a minute.
const projections = proxyActivities<IncidentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

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

  setHandler(
    setStatusUpdate,
    (request: SetStatusRequest): Promise<IncidentView> =>
      exclusive(async () => {
        const view = await transition(request.status, request.actor);
        if (isTerminal(request.status)) closeRequested = true;
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

  for (;;) {
    await condition(() => closeRequested || pendingAlerts.length > 0 || workflowInfo().continueAsNewSuggested);
    if (pendingAlerts.length > 0) {
      await exclusive(processAlerts);
      continue;
    }
    await condition(allHandlersFinished);
    if (closeRequested && isTerminal(state.status)) return state;
    closeRequested = false;
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof incidentWorkflow>({
        ...input,
        status: state.status,
        severity: state.severity,
        version: state.version,
      });
    }
  }
}
