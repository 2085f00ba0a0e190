/** The incident workflow's activities, each group with the timeouts and retries its work needs. */
import { patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { IncidentActivities } from '../../activities/index.js';
import type { InvestigationActivities } from '../../analysis/investigation-types.js';
import type { RemediationActivities } from '../../analysis/remediation-types.js';
import { agentRoles, type AgentRole } from '../../analysis/types.js';

// Projection writes must land eventually: retry without limit, backing off to a minute.
export const projections = proxyActivities<IncidentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

// The same quick writes as local activities (ADR 0269): run by the worker inside the workflow
// task that asks for them, one marker event each instead of an activity task's three events and
// the workflow task its completion wakes. Each write is idempotent (version guard, request key),
// so a rerun after a lost workflow task is harmless. Past localRetryThreshold a retry waits on a
// timer, not in the worker.
const localBookkeepingOptions = {
  startToCloseTimeout: '30 seconds',
  localRetryThreshold: '10 seconds',
} as const;
export const localProjections = proxyLocalActivities<IncidentActivities>({
  ...localBookkeepingOptions,
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
export const localInvestigationLifecycle = proxyLocalActivities<InvestigationActivities>({
  ...localBookkeepingOptions,
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 10,
  },
});

/**
 * Whether this run writes its bookkeeping with local activities (ADR 0269). Histories recorded
 * before the patch replay with activity tasks; the first live decision holds for the run.
 */
export const bookkeepingIsLocal = (): boolean => patched('bookkeeping-local-activities');

// An activity that waits on a model or a skill heartbeats while it waits: a
// worker that dies is noticed after this long, not after the whole start-to-close timeout.
const WAITING_HEARTBEAT_TIMEOUT = '15 seconds';

// Triage calls a model (the built-in analyzer by default, or an LLM with its own timeout).
export const analysis = proxyActivities<IncidentActivities>({
  summary: 'triage: classify the priority and pick the agents',
  startToCloseTimeout: '60 seconds',
  heartbeatTimeout: WAITING_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});

// Investigation bookkeeping (quota, rows, events): quick database writes. A start gives up
// after ten attempts (its caller is answered); recording a failure, which nobody waits on, must
// land eventually, like a projection.
export const investigationLifecycle = proxyActivities<InvestigationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 10,
  },
});
export const investigationRecords = proxyActivities<InvestigationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
// Specialist agents run in parallel; each heartbeats, so a dead worker is noticed in 20 s.
const agentOptions = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
} as const;

/** What each agent looks at, as its activity's summary in the Temporal UI's timeline. */
const agentSummaries: Record<AgentRole, string> = {
  deployment:
    'deployment agent: deploys, syncs, flag flips of the service and its dependencies in the 6 h before the first alert',
  code_change: 'code-change agent: pushes, merged pull requests and releases before the first alert',
  logs: 'logs agent: log lines (exceptions, error messages) in the alerts of the incident and its dependencies',
  metrics: 'metrics agent: metric alerts, their thresholds, values and queries',
  alerts: 'alerts agent: the incident’s alerts and those correlated in time across services',
  topology: 'topology agent: failing upstream dependencies and the downstream blast radius',
  knowledge: 'knowledge agent: learned failure patterns matching the incident',
  runbook: 'runbook agent: runbooks for the service, its failing dependencies and the incident’s keywords',
};

// One proxy per agent, for its summary: the summary rides in the command's user metadata,
// which replay does not compare, so older histories replay unchanged.
export const agentProxies = Object.fromEntries(
  agentRoles.map((role) => [
    role,
    proxyActivities<InvestigationActivities>({ ...agentOptions, summary: agentSummaries[role] }),
  ]),
) as Record<AgentRole, ReturnType<typeof proxyActivities<InvestigationActivities>>>;
// Synthesis may call a model with its own timeout, and falls back to the built-in analyzer.
export const synthesis = proxyActivities<InvestigationActivities>({
  summary: 'synthesis: rank the agents’ hypotheses into a root cause',
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WAITING_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});

// Pattern learning on resolution: quick database writes; a failure is logged by Temporal and the
// resolution stands (learning never fails the incident).
export const learning = proxyActivities<IncidentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
});

// Remediation bookkeeping and steps. A step runs its action once (idempotency key per step), so
// retrying the activity is safe; a step's own failure is an outcome, not a thrown error. They
// retry without limit: a database outage longer than a few minutes must delay a remediation, not
// end it halfway (ADR 0165).
const remediationRetry = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' } as const;
export const remediation = proxyActivities<RemediationActivities>({
  startToCloseTimeout: '2 minutes',
  retry: remediationRetry,
});
// A step may call a skill, and heartbeats while it runs.
export const remediationSteps = proxyActivities<RemediationActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WAITING_HEARTBEAT_TIMEOUT,
  retry: remediationRetry,
});
