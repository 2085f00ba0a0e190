/**
 * The incident workflow's activities as plain functions over an in-memory incident: the edge of a
 * workflow unit test. They record every call, so a test asserts what the workflow asked for.
 */
import { Context } from '@temporalio/activity';
import type { IncidentActivities } from '../../../src/activities/index.js';
import { agentActivityNames, type InvestigationActivities } from '../../../src/analysis/investigation-types.js';
import type { RemediationActivities } from '../../../src/analysis/remediation-types.js';
import { agentRoles } from '../../../src/analysis/types.js';
import type { IncidentView, IncidentWorkflowInput } from '../../../src/workflows/messages.js';

type AllActivities = IncidentActivities & InvestigationActivities & RemediationActivities;
type Used =
  | 'readIncident'
  | 'projectStatusChange'
  | 'learnFromResolution'
  | 'triageIncident'
  | 'recordTriageFailure'
  | 'beginInvestigation'
  | 'synthesizeInvestigation'
  | 'recordInvestigationFailure'
  | 'latestInvestigation'
  | keyof RemediationActivities;

export interface Call {
  name: string;
  args: Record<string, unknown>;
}

/** Minutes an approval waits before its deadline (the tenant's `approvalTimeoutMinutes`). */
export const APPROVAL_MINUTES = 60;

export function fakeIncidentActivities(input: IncidentWorkflowInput) {
  const calls: Call[] = [];
  const record = (name: string, args: object) => calls.push({ name, args: { ...args } });
  let view: IncidentView = {
    incidentId: input.incidentId,
    title: 'Checkout errors',
    description: 'Checkout answers 502 errors',
    severity: input.severity,
    status: input.status,
    source: input.source,
    assignedAgents: [],
    rootCause: null,
    recommendedActions: [],
    service: 'checkout-api',
    serviceId: null,
    ownerTeam: null,
    immediateAttention: false,
    occurrenceCount: 1,
    lastSeenAt: null,
    recoveredAt: null,
    mergedInto: null,
    createdAt: new Date(0).toISOString(),
    updatedAt: new Date(0).toISOString(),
  };
  const state = { evidenceHash: 'evidence-1', investigationRuns: 0, proposals: 0, manualOnly: false };
  /** The test server's clock (skipped time included) when this activity attempt was scheduled. */
  const serverNow = () => Context.current().info.currentAttemptScheduledTimestampMs;

  const activities: Pick<AllActivities, Used> = {
    async readIncident(req) {
      record('readIncident', req);
      return view;
    },
    async projectStatusChange(change) {
      record('projectStatusChange', change);
      view = { ...view, status: change.to, updatedAt: new Date(serverNow()).toISOString() };
      return view;
    },
    async learnFromResolution(req) {
      record('learnFromResolution', req);
      return { learned: false, reason: 'a unit test learns nothing' };
    },
    async triageIncident(req) {
      record('triageIncident', req);
      return {
        incidentId: req.incidentId,
        priority: view.severity,
        summary: 'Checkout errors',
        confidence: 0.8,
        suggestedAgents: [],
        severityChangedFrom: null,
      };
    },
    async recordTriageFailure(req) {
      record('recordTriageFailure', req);
    },
    async beginInvestigation(req) {
      record('beginInvestigation', req);
      return { run: ++state.investigationRuns, triaged: true };
    },
    async synthesizeInvestigation(req) {
      record('synthesizeInvestigation', req);
      return {
        rootCause: `Deployment behind ${state.evidenceHash}`,
        confidence: 0.9,
        recommendedActions: ['Roll back checkout-api'],
      };
    },
    async recordInvestigationFailure(req) {
      record('recordInvestigationFailure', req);
    },
    async latestInvestigation(req) {
      record('latestInvestigation', req);
      return state.investigationRuns > 0 ? { run: state.investigationRuns, status: 'completed' } : null;
    },
    async proposeRemediation(req) {
      record('proposeRemediation', req);
      const n = ++state.proposals;
      // A plan of manual steps only: nothing proposed (ADR 0258).
      if (state.manualOnly)
        return {
          remediationId: '',
          approvalId: '',
          deadline: '',
          autoApprove: false,
          evidenceHash: '',
          steps: 0,
          manualSteps: 2,
        };
      return {
        remediationId: `rem-${n}`,
        approvalId: `apr-${n}`,
        deadline: new Date(serverNow() + APPROVAL_MINUTES * 60_000).toISOString(),
        autoApprove: false,
        evidenceHash: state.evidenceHash,
        steps: 2,
      };
    },
    async recordApprovalDecision(req) {
      record('recordApprovalDecision', req);
      return {
        approvalId: req.approvalId,
        decision: req.decision,
        remediationId: req.remediationId,
        remediationStatus: req.decision === 'approve' ? 'approved' : 'rejected',
        decidedAt: new Date(serverNow()).toISOString(),
      };
    },
    async expireApproval(req) {
      record('expireApproval', req);
    },
    async executeRemediationStep(req) {
      record('executeRemediationStep', req);
      return { index: req.index, ok: true };
    },
    async verifyRemediation(req) {
      record('verifyRemediation', req);
      return { ok: true, detail: 'the alerts have recovered' };
    },
    async completeRemediation(req) {
      record('completeRemediation', req);
    },
    async evidenceHash(req) {
      record('evidenceHash', req);
      return state.evidenceHash;
    },
  };
  const agents = Object.fromEntries(
    agentRoles.map((role) => [
      agentActivityNames[role],
      async (req: object) => {
        record(agentActivityNames[role], req);
        return { agentRole: role, content: `The ${role} agent found nothing unusual`, evidenceIds: [], found: false };
      },
    ]),
  );

  return {
    activities: { ...activities, ...agents },
    calls,
    /** The calls to one activity, their arguments only. */
    callsTo: (name: string) => calls.filter((c) => c.name === name).map((c) => c.args),
    /** New evidence arrives: the incident's evidence hash changes from here on. */
    changeEvidence(hash: string) {
      state.evidenceHash = hash;
    },
    /** The conclusions from here on recommend manual steps only. */
    manualStepsOnly() {
      state.manualOnly = true;
    },
  };
}
