/**
 * The incident as one workflow run holds it: the state its query answers, its status moves
 * (projection first, then the run's own state), the lock its writes take, and the close flag.
 * Triage, investigation and remediation all work through it.
 */
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { IncidentStatus } from '../../db/schema/incidents.js';
import type { Actor, IncidentView, IncidentWorkflowInput, IncidentWorkflowState } from '../messages.js';
import { IncidentStatusKey } from '../search-attributes.js';
import { bookkeepingIsLocal, learning, localProjections, projections } from './proxies.js';

type StatusChange = Parameters<typeof projections.projectStatusChange>[0];

/** Runs async sections one at a time so concurrent updates never interleave their writes. */
function createMutex(): <T>(section: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(section: () => Promise<T>): Promise<T> => {
    const result = tail.then(section, section);
    tail = result.catch(() => undefined);
    return result;
  };
}

export class IncidentRecord {
  readonly state: IncidentWorkflowState;
  /** Set by a move to a terminal status; a run that starts from a stored `closed` state (a reopen) lives until an update moves it. */
  closeRequested = false;
  readonly exclusive = createMutex();

  constructor(input: IncidentWorkflowInput) {
    this.state = {
      incidentId: input.incidentId,
      tenantId: input.tenantId,
      status: input.status,
      severity: input.severity,
      version: input.version,
    };
  }

  /** The status now, unnarrowed (a status check before an await says nothing after it). */
  status(): IncidentStatus {
    return this.state.status;
  }

  /** The incident's ids, as every activity takes them. */
  ids(): { incidentId: string; tenantId: string } {
    return { incidentId: this.state.incidentId, tenantId: this.state.tenantId };
  }

  /** The ids and the workflow task deciding a write now (for its audit entry). */
  traced(): { incidentId: string; tenantId: string; workflowId: string; historyEventId: number } {
    return { ...this.ids(), workflowId: workflowInfo().workflowId, historyEventId: workflowInfo().historyLength };
  }

  read(): Promise<IncidentView> {
    return (bookkeepingIsLocal() ? localProjections : projections).readIncident(this.ids());
  }

  /** Resolved or closed, by a person or by its alerts (or a close on its way). */
  settled(): boolean {
    return this.closeRequested || this.state.status === 'resolved' || this.state.status === 'closed';
  }

  /**
   * Moves the incident to `target` (projection first, then the workflow's own state). `project`
   * writes the change: a merge writes its close with the alerts it moves.
   */
  async transition(
    target: IncidentStatus,
    actor: Actor,
    project?: (change: StatusChange) => Promise<IncidentView>,
  ): Promise<IncidentView> {
    if (target === this.state.status) return this.read();
    project ??= (bookkeepingIsLocal() ? localProjections : projections).projectStatusChange;
    const version = this.state.version + 1;
    const view = await project({
      ...this.traced(),
      from: this.state.status,
      to: target,
      version,
      actor,
    });
    this.state.status = target;
    this.state.version = version;
    upsertSearchAttributes([{ key: IncidentStatusKey, value: target }]);
    // Resolving learns its pattern (DESIGN §3), before the update answers: read-your-writes.
    if (target === 'resolved') {
      await learning.learnFromResolution(this.traced()).catch(() => undefined);
    }
    return view;
  }
}
