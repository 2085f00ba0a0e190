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
  /** Set when a run continues as new after its automatic triage, so it does not run twice. */
  autoTriaged?: boolean;
  /**
   * The latest alert event ids the runs before this one received (at most
   * SEEN_EVENT_IDS_CARRIED), so a redelivery that straddles a continue-as-new counts once.
   */
  seenEventIds?: string[];
}

/** Alert event ids carried into the next run: the dispatcher redelivers only recent ones. */
export const SEEN_EVENT_IDS_CARRIED = 500;

export interface IncidentWorkflowState {
  incidentId: string;
  tenantId: string;
  status: IncidentStatus;
  severity: Severity;
  version: number;
  /** Alerts signalled to this run (repeats and resolutions after the opening one). */
  alertsReceived?: number;
  lastAlertStatus?: 'firing' | 'resolved';
  /** Triage requests this run handled, and the latest classification's priority. */
  triageRuns?: number;
  triagePriority?: Severity;
  /** The latest investigation run this workflow drove, and where it stands. */
  investigationRun?: number;
  investigationStatus?: 'running' | 'completed' | 'failed';
  /** Syntheses of the latest run (more than one when human context arrived). */
  syntheses?: number;
  /** Investigation start requests this run handled. */
  investigationStarts?: number;
  /** Remediation proposals this run made, and the approval now awaited (if any). */
  remediationProposals?: number;
  pendingApprovalId?: string;
  remediationStatus?: string;
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
  /** The incident a person merged this one into (it is then closed); null otherwise. */
  mergedInto: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The triage classification (interface: incidentId, priority, summary, confidence, suggestedAgents). */
export interface TriageClassificationView {
  incidentId: string;
  priority: Severity;
  summary: string;
  confidence: number;
  suggestedAgents: string[];
}

export interface TriageCommand {
  actor: Actor;
}

export interface InvestigationCommand {
  actor: Actor;
}

export interface InvestigationStarted {
  incidentId: string;
  status: 'investigating';
}

export interface ApprovalResponse {
  approvalId: string;
  decision: 'approve' | 'reject';
  notes?: string;
  actor: Actor;
}

export interface SetStatusRequest {
  status: IncidentStatus;
  actor: Actor;
}

/**
 * A person merges this incident into another open one of its tenant (`survivorId`): its alerts
 * move there, and it closes with `mergedInto`, in one transaction of the merge activity.
 */
export interface MergeRequest {
  survivorId: string;
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
  /** None of the incident's alerts fires any more (it groups several); absent from older senders. */
  incidentRecovered?: boolean;
}

/**
 * The `type` of every failure the incident workflow's updates refuse or fail with itself; the
 * api's port maps these types (never the message text) to its error codes.
 */
export const incidentFailureTypes = {
  InvalidStatus: 'InvalidStatus',
  ActorRequired: 'ActorRequired',
  IncidentClosed: 'IncidentClosed',
  TriageFailed: 'TriageFailed',
  InvestigationRunning: 'InvestigationRunning',
  QuotaExceeded: 'QuotaExceeded',
  ApprovalNotFound: 'ApprovalNotFound',
  ApprovalExpired: 'ApprovalExpired',
  AlreadyDecided: 'AlreadyDecided',
  InvalidDecision: 'InvalidDecision',
  /** The incident merged into is not open (or gone), as the merge found it under its locks. */
  MergeRefused: 'MergeRefused',
} as const;
export type IncidentFailureType = (typeof incidentFailureTypes)[keyof typeof incidentFailureTypes];

export const setStatusUpdate = defineUpdate<IncidentView, [SetStatusRequest]>('setStatus');
/** Runs triage now (re-triage when it ran before) and answers the classification. */
export const triageUpdate = defineUpdate<TriageClassificationView, [TriageCommand]>('triage');
/** Starts an investigation (triage first when it has not run); refused while one runs. */
export const startInvestigationUpdate = defineUpdate<InvestigationStarted, [InvestigationCommand]>(
  'startInvestigation',
);
/**
 * An admin's answer to an approval request. The validator refuses with a typed failure:
 * `ApprovalNotFound`, `ApprovalExpired` (deadline passed or superseded), `AlreadyDecided`,
 * `InvalidDecision`.
 */
export const respondToApprovalUpdate = defineUpdate<ApprovalDecidedView, [ApprovalResponse]>('respondToApproval');

export interface ApprovalDecidedView {
  approvalId: string;
  decision: 'approve' | 'reject';
  remediationId: string;
  remediationStatus: string;
  decidedAt: string;
}

/**
 * Merges this incident into `survivorId` and closes it (`mergedInto` set), answering its view. The
 * validator refuses a closed or resolved incident (`IncidentClosed`) and a merge into itself; the
 * merge refuses a survivor that is not open (`MergeRefused`).
 */
export const mergeIntoUpdate = defineUpdate<IncidentView, [MergeRequest]>('mergeInto');

/** Human context was stored for the incident: a running investigation takes it in, a finished one is re-synthesised. */
export const investigationContextSignal = defineSignal('investigationContext');
export const alertsReceivedSignal = defineSignal<[AlertsReceived]>('alertsReceived');
export const getStateQuery = defineQuery<IncidentWorkflowState>('getState');
