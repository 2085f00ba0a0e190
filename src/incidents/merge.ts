/**
 * People correct the grouping: a merge of one open incident into another, through the merged
 * incident's workflow (its close), and a split of one alert out to an incident of its own.
 */
import { findIncident, markWorkflowStarted, toIncidentView, toWorkflowInput } from '../db/repositories/incidents.js';
import type { IncidentRow } from '../db/schema/incidents.js';
import { AppError } from '../errors.js';
import type { IncidentView } from '../workflows/messages.js';
import type { IncidentServices, Requester } from './commands.js';
import { writeSplit } from './merge-writes.js';

/** The 409 for an incident that is not open, naming it and its part in the merge. */
function refuseSettled(row: IncidentRow, role: 'merged into' | 'to merge'): void {
  if (row.status !== 'resolved' && row.status !== 'closed') return;
  throw new AppError(
    'conflict',
    `Incident ${row.id} (${role}) is ${row.status}: only open incidents are merged; reopen it first (PATCH its status)`,
  );
}

/**
 * Merges `mergedId` into `survivorId` (both of the requester's tenant, both open) and answers the
 * survivor as it is now. The merged incident's workflow writes the move and its close in one
 * transaction, under the row locks, which judges the survivor again; what is read here first
 * gives the clear answers (400, 404, 409) without a workflow call.
 */
async function mergeIncidents(
  services: IncidentServices,
  by: Requester,
  survivorId: string,
  mergedId: string,
): Promise<IncidentView> {
  const { db, workflows } = services;
  if (survivorId === mergedId) {
    const message = 'an incident is not merged into itself: name another open incident';
    throw new AppError('validation_error', `incidentId: ${message}`, [{ path: 'incidentId', message }]);
  }
  const [survivor, merged] = await Promise.all([
    findIncident(db, by.tenant.id, survivorId),
    findIncident(db, by.tenant.id, mergedId),
  ]);
  if (!survivor) throw new AppError('incident_not_found', 'No incident has that identifier');
  if (!merged) throw new AppError('incident_not_found', 'No incident has the identifier given as incidentId');
  refuseSettled(survivor, 'merged into');
  refuseSettled(merged, 'to merge');
  await workflows.mergeIncident(toWorkflowInput(merged), merged.title, {
    survivorId,
    actor: { type: 'user', id: by.userId, requestId: by.requestId },
  });
  // A workflow the call started is marked started, so the dispatcher leaves it.
  if (!merged.workflowStartedAt) await markWorkflowStarted(db, merged.id);
  const after = await findIncident(db, by.tenant.id, survivorId);
  return toIncidentView(after!);
}

/** Splits an alert out of an open incident to a new one, whose workflow the dispatcher starts; answers it. */
async function splitAlert(
  services: IncidentServices,
  by: Requester,
  incidentId: string,
  alertId: string,
): Promise<IncidentView> {
  const opened = await writeSplit(services.db, {
    tenantId: by.tenant.id,
    incidentId,
    alertId,
    userId: by.userId,
    requestId: by.requestId,
    now: services.clock(),
  });
  return toIncidentView(opened);
}

export function incidentMergeCommands(services: IncidentServices) {
  return {
    merge: (by: Requester, survivorId: string, mergedId: string) => mergeIncidents(services, by, survivorId, mergedId),
    split: (by: Requester, incidentId: string, alertId: string) => splitAlert(services, by, incidentId, alertId),
  };
}

export type IncidentMergeCommands = ReturnType<typeof incidentMergeCommands>;
