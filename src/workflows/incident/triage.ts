/**
 * Triage: moves an open incident to `triaging`, classifies it (activity), and takes the
 * priority as the incident's severity. A failure is recorded (`triage.failed`) and rethrown.
 */
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Actor, TriageClassificationView } from '../messages.js';
import { SeverityKey } from '../search-attributes.js';
import { failureReason, triageFailed } from './failures.js';
import { analysis, projections } from './proxies.js';
import type { IncidentRecord } from './record.js';

export async function runTriage(record: IncidentRecord, actor: Actor): Promise<TriageClassificationView> {
  const { state } = record;
  if (state.status === 'open') await record.transition('triaging', actor);
  state.triageRuns = (state.triageRuns ?? 0) + 1;
  const request = { ...record.traced(), requestKey: `${workflowInfo().runId}:${state.triageRuns}`, actor };
  let outcome;
  try {
    outcome = await analysis.triageIncident(request);
  } catch (err) {
    const reason = failureReason(err);
    await projections.recordTriageFailure({ ...request, reason });
    throw triageFailed(reason);
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
