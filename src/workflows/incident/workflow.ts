/**
 * One workflow per incident (workflow id = incidentId): the source of truth for its lifecycle.
 * Deterministic code only: all I/O happens in activities. Each handler is one call into the
 * entity (state.ts); the main loop runs what they leave due.
 */
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { isTerminal } from '../lifecycle.js';
import {
  alertsReceivedSignal,
  getStateQuery,
  investigationContextSignal,
  mergeIntoUpdate,
  respondToApprovalUpdate,
  setStatusUpdate,
  startInvestigationUpdate,
  triageUpdate,
  type IncidentWorkflowInput,
  type IncidentWorkflowState,
} from '../messages.js';
import { keepCurrentDetails, renderCurrentDetails } from './details.js';
import { IncidentState } from './state.js';

export async function incidentWorkflow(input: IncidentWorkflowInput): Promise<IncidentWorkflowState> {
  const incident = new IncidentState(input);
  const { record, investigation, remediation } = incident;

  setHandler(getStateQuery, () => incident.snapshot());
  setHandler(setStatusUpdate, (request) => incident.setStatus(request), {
    validator: (request) => incident.validateSetStatus(request),
  });
  setHandler(startInvestigationUpdate, (command) => incident.startInvestigation(command), {
    validator: (command) => incident.validateCommand(command, 'investigated'),
  });
  setHandler(respondToApprovalUpdate, (response) => incident.respondToApproval(response), {
    validator: (response) => incident.validateApprovalResponse(response),
  });
  setHandler(investigationContextSignal, () => incident.contextArrived());
  setHandler(triageUpdate, (command) => incident.triage(command), {
    validator: (command) => incident.validateCommand(command, 'triaged'),
  });
  setHandler(alertsReceivedSignal, (alerts) => incident.alertsReceived(alerts));
  setHandler(mergeIntoUpdate, (request) => incident.merge(request), {
    validator: (request) => incident.validateMerge(request),
  });

  // The Temporal UI's current details follow the incident (status, root cause, approval).
  keepCurrentDetails(() =>
    renderCurrentDetails({
      state: record.state,
      conclusion: investigation.conclusion,
      approval: remediation.awaitedApproval(),
    }),
  );

  await incident.runAutomatedSteps();

  for (;;) {
    await condition(() => record.closeRequested || incident.hasWork() || workflowInfo().continueAsNewSuggested);
    if (incident.remediationDue()) {
      remediation.launch();
      continue;
    }
    if (investigation.due()) {
      investigation.launch();
      continue;
    }
    if (incident.alertsDue()) {
      await incident.processAlerts();
      continue;
    }
    if (investigation.resynthesisDue()) {
      await investigation.resynthesiseLatest();
      continue;
    }
    if (investigation.contextForStoredDue()) {
      await investigation.resynthesiseStored();
      continue;
    }
    // Before ending the run (closed, or continued as new), the tasks finish; work that arrives
    // meanwhile (an alert while an approval waits, a begun investigation, a conclusion's
    // remediation request) is done first: continuing as new used to drop it (ADR 0170).
    await condition(() => incident.hasWork() || (allHandlersFinished() && incident.tasksIdle()));
    if (incident.hasWork()) continue;
    if (record.closeRequested && isTerminal(record.state.status)) return record.state;
    const reopened = record.closeRequested;
    record.closeRequested = false;
    // Reopened while the close drained: work held back by the close (a conclusion's remediation
    // request) is due again, and continuing as new now would drop it (ADR 0205).
    if (reopened && incident.hasWork()) continue;
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof incidentWorkflow>(incident.nextRunInput());
    }
  }
}
