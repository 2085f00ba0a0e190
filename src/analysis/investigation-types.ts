/**
 * The contract between the incident workflow and the investigation engine's activities.
 * The workflow calls `beginInvestigation`, then every agent in parallel, then
 * `synthesizeInvestigation` (again, with the same reports, whenever human context arrives).
 */
import type { Actor } from '../workflows/messages.js';
import type { AgentRole } from './types.js';

export interface InvestigationRequest {
  incidentId: string;
  tenantId: string;
  /** `investigations.run` of this investigation: writes of an older run are ignored. */
  run: number;
  workflowId: string;
  /** The workflow task that decided this write (for the audit entry). */
  historyEventId?: number;
}

/** What one specialist agent found: a readable finding and the evidence items it stored. */
export interface AgentReport {
  agentRole: AgentRole;
  /** The agent's findings in one or a few sentences ("No deployment of checkout-api in the 2 h before…"). */
  content: string;
  /** The `evi_…` ids it stored (deduplicated per incident, so a retry stores nothing twice). */
  evidenceIds: string[];
  /** Whether the agent found anything relevant. */
  found: boolean;
}

export interface SynthesisRequest extends InvestigationRequest {
  reports: AgentReport[];
  /**
   * Alerts the workflow has heard of since it opened: a synthesis after new alerts is a new
   * conclusion (its own event), not a retry of the previous one.
   */
  alertsSeen?: number;
}

export interface SynthesisResult {
  rootCause: string;
  confidence: number;
  /** Ordered, concrete ("Roll back deployment 42 of checkout-api (sha abc1234)"). */
  recommendedActions: string[];
}

export interface BeginInvestigationRequest {
  incidentId: string;
  tenantId: string;
  actor: Actor;
  workflowId: string;
  /** The workflow task that decided this write (for the audit entry). */
  historyEventId?: number;
  /** Unique per start request (workflow run id and counter): a retried activity reuses it. */
  requestKey: string;
}

export interface BeginInvestigationResult {
  /** The run started; null when the plan's monthly investigations are used up (automatic starts). */
  run: number | null;
  /** Whether the incident has been triaged (the investigation triages first when not). */
  triaged: boolean;
}

/** The agent activity names, one per role (readable in the Temporal UI). */
export const agentActivityNames = {
  deployment: 'deploymentAgent',
  code_change: 'codeChangeAgent',
  logs: 'logsAgent',
  metrics: 'metricsAgent',
  alerts: 'alertsAgent',
  topology: 'topologyAgent',
  knowledge: 'knowledgeAgent',
  runbook: 'runbookAgent',
} as const satisfies Record<AgentRole, string>;

type AgentActivity = (req: InvestigationRequest) => Promise<AgentReport>;

/** Every investigation activity, as the workflow proxies them. */
export type InvestigationActivities = Record<(typeof agentActivityNames)[AgentRole], AgentActivity> & {
  beginInvestigation(req: BeginInvestigationRequest & { automatic: boolean }): Promise<BeginInvestigationResult>;
  synthesizeInvestigation(req: SynthesisRequest): Promise<SynthesisResult>;
  recordInvestigationFailure(req: InvestigationRequest & { reason: string }): Promise<void>;
  /** The incident's stored investigation (its run and status), for a workflow run that did not start it; null when none. */
  latestInvestigation(req: { incidentId: string; tenantId: string }): Promise<{ run: number; status: string } | null>;
};
