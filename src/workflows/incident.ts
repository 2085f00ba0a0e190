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
  getStateQuery,
  setStatusUpdate,
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

  setHandler(
    setStatusUpdate,
    (request: SetStatusRequest): Promise<IncidentView> =>
      exclusive(async () => {
        const target: IncidentStatus = request.status;
        let view: IncidentView;
        if (target === state.status) {
          view = await projections.readIncident({ incidentId: state.incidentId, tenantId: state.tenantId });
        } else {
          const version = state.version + 1;
          view = await projections.projectStatusChange({
            incidentId: state.incidentId,
            tenantId: state.tenantId,
            from: state.status,
            to: target,
            version,
            actor: request.actor,
            workflowId: workflowInfo().workflowId,
          });
          state.status = target;
          state.version = version;
          upsertSearchAttributes([{ key: IncidentStatusKey, value: target }]);
        }
        if (isTerminal(target)) closeRequested = true;
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

  for (;;) {
    await condition(() => closeRequested || workflowInfo().continueAsNewSuggested);
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
