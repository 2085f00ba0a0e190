/**
 * The event catalogue (DESIGN §5): the 21 event types and the payload each emitter writes, and
 * billing's five (docs/billing.md). Every append goes through `NewEvent`, so a misspelt type or a
 * payload of another event does not compile. The wire format is the `events` row: `type` as
 * written here, `payload` as JSON.
 */

/** Who caused a change (the actor fields several payloads carry). */
type ActorFields = { actorType: string; actorId: string };

/** The incident's ownership as `ownershipPayload` (domain/ownership.ts) spreads it. */
type OwnershipFields = {
  service?: string | null;
  serviceId?: string | null;
  ownerTeam?: string | null;
  immediateAttention?: boolean;
  criticality?: number;
};

export type IncidentCreatedPayload = OwnershipFields & {
  incidentId: string;
  title: string;
  severity: string;
  /** `manual` from the api, `automated` from ingestion. */
  source: string;
  /** The alert provider, for incidents opened by ingestion. */
  provider?: string;
  /** The incident a person split this one's alert out of. */
  splitFrom?: string;
};

/** `incident.status_changed`, and `incident.resolved` with the same payload. */
export type IncidentStatusPayload = ActorFields & {
  incidentId: string;
  from: string;
  to: string;
  /** The incident a person merged this one into (the move to `closed` of a merge). */
  mergedInto?: string;
};

export type IncidentSeverityChangedPayload = { incidentId: string; from: string; to: string; reason: string };

export type TriageCompletedPayload = {
  incidentId: string;
  priority: string;
  summary: string;
  confidence: number;
  suggestedAgents: string[];
  model: string;
  severityChangedFrom: string | null;
};

export type TriageFailedPayload = { incidentId: string; reason: string };

export type InvestigationStartedPayload = ActorFields & { incidentId: string; run: number };

export type InvestigationEvidenceAddedPayload = {
  incidentId: string;
  run: number;
  agentRole: string;
  added: number;
  /** Evidence items added, by evidence type. */
  counts: Record<string, number>;
  evidenceIds: string[];
};

export type InvestigationCompletedPayload = {
  incidentId: string;
  run: number;
  rootCause: string;
  confidence: number;
  recommendedActions: string[];
  hypothesis: string;
  contextSeq: number;
  evidenceCounts: Record<string, number>;
  model: string;
};

/** A failed run (`reason`), or a start refused by the quota (`run: null`, `reason: 'quota_exceeded'`, `message`). */
export type InvestigationFailedPayload = { incidentId: string; run: number | null; reason: string; message?: string };

export type ApprovalRequestedPayload = {
  incidentId: string;
  remediationId: string;
  approvalId: string;
  deadline: string;
  steps: Array<{ index: number; kind: string; action: string; description: string }>;
  autoApprove: boolean;
  evidenceHash: string;
  investigationRun: number;
};

export type ApprovalExpiredPayload = { incidentId: string; remediationId: string; approvalId: string; reason: string };

/** `remediation.approved` and `remediation.rejected`. */
export type RemediationDecisionPayload = ActorFields & {
  incidentId: string;
  remediationId: string;
  approvalId: string;
  decidedAt: string;
};

/** `remediation.completed` carries `verification`, `remediation.failed` carries `failure`. */
export type RemediationOutcomePayload = {
  incidentId: string;
  remediationId: string;
  verification?: string;
  failure?: string;
};

export type PatternCreatedPayload = {
  patternId: string;
  title: string;
  service: string | null;
  category: string;
  alertNames: string[];
  source: string;
  incidentId: string | null;
};

export type PatternPromotedPayload = {
  patternId: string;
  title: string;
  confidence: number;
  occurrences: number;
  confirms: number;
  rejects: number;
  status: string;
  incidentId: string | null;
};

export type FeedbackReceivedPayload = {
  feedbackId: string;
  incidentId: string;
  patternId: string | null;
  type: string;
  previousType: string | null;
  updatedConfidence: number | null;
  correctedPatternId?: string;
};

export type QuotaWarningPayload = { metric: string; period: string; used: number; limit: number; percent: number };

export type ExportCompletedPayload = {
  exportId: string;
  format: string;
  rowCount: number | null;
  bytes: number | null;
  location: string | null;
  completedAt: string | undefined;
};

/** Each event type with its payload. */
export interface EventPayloads {
  'incident.created': IncidentCreatedPayload;
  'incident.status_changed': IncidentStatusPayload;
  'incident.severity_changed': IncidentSeverityChangedPayload;
  'incident.resolved': IncidentStatusPayload;
  'triage.completed': TriageCompletedPayload;
  'triage.failed': TriageFailedPayload;
  'investigation.started': InvestigationStartedPayload;
  'investigation.evidence_added': InvestigationEvidenceAddedPayload;
  'investigation.completed': InvestigationCompletedPayload;
  'investigation.failed': InvestigationFailedPayload;
  'approval.requested': ApprovalRequestedPayload;
  'approval.expired': ApprovalExpiredPayload;
  'remediation.approved': RemediationDecisionPayload;
  'remediation.rejected': RemediationDecisionPayload;
  'remediation.completed': RemediationOutcomePayload;
  'remediation.failed': RemediationOutcomePayload;
  'knowledge.pattern_created': PatternCreatedPayload;
  'knowledge.pattern_promoted': PatternPromotedPayload;
  'knowledge.feedback_received': FeedbackReceivedPayload;
  'system.quota_warning': QuotaWarningPayload;
  'system.export_completed': ExportCompletedPayload;
}

export type EventType = keyof EventPayloads;

/** Billing's events (docs/billing.md): amounts and plans, so for admins only (ADMIN_ONLY_EVENTS). */
export interface BillingEventPayloads {
  /** `paymentId` null: a downgrade at period end, or an operator's `tenant plan`. */
  'billing.plan_changed': ActorFields & { from: string; to: string; paymentId: string | null };
  'billing.plan_change_scheduled': ActorFields & { from: string; to: string; effectiveAt: string };
  'billing.plan_change_canceled': ActorFields & { planId: string; canceled: string };
  /** `paymentId` null and `amountUsd` 0: granted by an operator. */
  'billing.credits_purchased': ActorFields & {
    pack: string;
    metric: string;
    units: number;
    period: string;
    paymentId: string | null;
    amountUsd: number;
  };
  'billing.payment_failed': ActorFields & {
    paymentId: string;
    kind: string;
    item: string;
    amountUsd: number;
    reason: string;
  };
}

export type BillingEventType = keyof BillingEventPayloads;

/**
 * Billing's types, apart from EVENT_TYPES: those are the 21 the interface lists for notification
 * preferences and triggers, and each has a notification text (notifications/describe.ts).
 */
export const BILLING_EVENT_TYPES = [
  'billing.plan_changed',
  'billing.plan_change_scheduled',
  'billing.plan_change_canceled',
  'billing.credits_purchased',
  'billing.payment_failed',
] as const satisfies readonly BillingEventType[];

const _billingComplete: Exclude<BillingEventType, (typeof BILLING_EVENT_TYPES)[number]> extends never ? true : never =
  true;
void _billingComplete;

/** Every event type, in the catalogue's order (the `satisfies` keeps it complete and exact). */
export const EVENT_TYPES = [
  'incident.created',
  'incident.status_changed',
  'incident.severity_changed',
  'incident.resolved',
  'triage.completed',
  'triage.failed',
  'investigation.started',
  'investigation.evidence_added',
  'investigation.completed',
  'investigation.failed',
  'approval.requested',
  'approval.expired',
  'remediation.approved',
  'remediation.rejected',
  'remediation.completed',
  'remediation.failed',
  'knowledge.pattern_created',
  'knowledge.pattern_promoted',
  'knowledge.feedback_received',
  'system.quota_warning',
  'system.export_completed',
] as const satisfies readonly EventType[];

// Fails to compile when EVENT_TYPES misses a type of EventPayloads.
const _complete: Exclude<EventType, (typeof EVENT_TYPES)[number]> extends never ? true : never = true;
void _complete;

const eventTypes: ReadonlySet<string> = new Set(EVENT_TYPES);

/** Whether a stored type (rows may hold anything) is one of the catalogue's. */
export const isEventType = (type: string): type is EventType => eventTypes.has(type);

/**
 * Events only admins are told about, and only admins' event streams carry: an audit export is an
 * admin's (its download is an admin's alone), and billing's carry prices and payments (billing is
 * an admin's). Everything else, quota warnings included (members' alerts are refused past the
 * quota), goes to every user of the tenant.
 */
export const ADMIN_ONLY_EVENTS: ReadonlySet<string> = new Set<EventType | BillingEventType>([
  'system.export_completed',
  ...BILLING_EVENT_TYPES,
]);

type AllEventPayloads = EventPayloads & BillingEventPayloads;

/** An event to append: one of the catalogue's types with that type's payload. */
export type NewEvent = {
  [T in keyof AllEventPayloads]: {
    tenantId: string;
    type: T;
    incidentId?: string | null;
    payload: AllEventPayloads[T];
    /** Unique per logical event, so a retried write appends it once. */
    idempotencyKey: string;
    occurredAt?: Date;
  };
}[keyof AllEventPayloads];
