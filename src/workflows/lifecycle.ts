import type { IncidentStatus } from '../db/schema/incidents.js';

/** The lifecycle order of an incident (DESIGN §3). */
export const lifecycleOrder: readonly IncidentStatus[] = [
  'open',
  'triaging',
  'investigating',
  'awaiting_approval',
  'remediating',
  'resolved',
  'closed',
];

export function isIncidentStatus(value: unknown): value is IncidentStatus {
  return typeof value === 'string' && (lifecycleOrder as readonly string[]).includes(value);
}

/** Whether a status ends the workflow run (a later PATCH reopens it as a new run). */
export function isTerminal(status: IncidentStatus): boolean {
  return status === 'closed';
}
