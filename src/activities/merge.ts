/** The merge of one incident into another, as the merged incident's workflow writes it (its close). */
import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../db/client.js';
import { findIncident, toIncidentView } from '../db/repositories/incidents.js';
import { AppError } from '../errors.js';
import { writeMerge, type MergeChange } from '../incidents/merge-writes.js';
import { incidentFailureTypes, type IncidentView } from '../workflows/messages.js';

export function createMergeActivities(deps: { db: Db }) {
  const { db } = deps;

  /**
   * Moves the incident's alerts to the survivor and closes it (`merged_into`) in one transaction;
   * answers its view. A survivor found not open under the locks fails for good (`MergeRefused`).
   */
  async function mergeIncident(change: MergeChange): Promise<IncidentView> {
    try {
      await writeMerge(db, change);
    } catch (err) {
      if (err instanceof AppError)
        throw ApplicationFailure.nonRetryable(err.message, incidentFailureTypes.MergeRefused);
      throw err;
    }
    const row = await findIncident(db, change.tenantId, change.incidentId);
    if (!row)
      throw ApplicationFailure.nonRetryable(`incident ${change.incidentId} has no projection`, 'IncidentMissing');
    return toIncidentView(row);
  }

  return { mergeIncident };
}
