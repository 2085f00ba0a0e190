/**
 * The incident workflow's message contract: the one module the api imports to talk to a
 * workflow. It holds definitions and types only, never workflow implementation.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { IncidentSource, IncidentStatus, Severity } from '../db/schema/incidents.js';

export const incidentWorkflowType = 'incidentWorkflow';

export interface Actor {
  type: 'user' | 'api_key' | 'system';
  id: string;
  requestId?: string;
}

export interface IncidentWorkflowInput {
  incidentId: string;
  tenantId: string;
  title: string;
  severity: Severity;
  source: IncidentSource;
  status: IncidentStatus;
  /** Projection version of the stored state the run starts from. */
  version: number;
}

export interface IncidentWorkflowState {
  incidentId: string;
  tenantId: string;
  status: IncidentStatus;
  severity: Severity;
  version: number;
  /** Alerts signalled to this run (repeats and resolutions after the opening one). */
  alertsReceived?: number;
  lastAlertStatus?: 'firing' | 'resolved';
}

/** The incident as projected to PostgreSQL, returned by updates (read-your-writes). */
export interface IncidentView {
  incidentId: string;
  title: string;
  description: string;
  severity: Severity;
  status: IncidentStatus;
  source: IncidentSource;
  assignedAgents: string[];
  rootCause: string | null;
  recommendedActions: string[];
  /** The service the alert (or creator) named, its topology node and owning team. */
  service: string | null;
  serviceId: string | null;
  ownerTeam: string | null;
  immediateAttention: boolean;
  occurrenceCount: number;
  lastSeenAt: string | null;
  recoveredAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface SetStatusRequest {
  status: IncidentStatus;
  actor: Actor;
}

export interface ReceivedAlert {
  eventId: string;
  status: 'firing' | 'resolved';
  occurredAt: string;
}

/** Alerts that attached to this incident after it opened, in the order they were received. */
export interface AlertsReceived {
  alerts: ReceivedAlert[];
  /** The tenant's `autoResolve` setting when the alerts were dispatched. */
  autoResolve: boolean;
}

export const setStatusUpdate = defineUpdate<IncidentView, [SetStatusRequest]>('setStatus');
export const alertsReceivedSignal = defineSignal<[AlertsReceived]>('alertsReceived');
export const getStateQuery = defineQuery<IncidentWorkflowState>('getState');
