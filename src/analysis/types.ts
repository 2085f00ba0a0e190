import type { Severity } from '../db/schema/incidents.js';

/** The specialist agents an investigation can run (identifiers used in `suggestedAgents`). */
export const agentRoles = ['deployment', 'code_change', 'logs', 'metrics', 'alerts', 'topology', 'knowledge', 'runbook'] as const;
export type AgentRole = (typeof agentRoles)[number];

/** What triage looks at: the incident, its alerts and the context around its service. */
export interface TriageInput {
  incident: {
    incidentId: string;
    title: string;
    description: string;
    severity: Severity;
    source: 'automated' | 'manual';
    service: string | null;
    ownerTeam: string | null;
    criticality: number | null;
    occurrenceCount: number;
    recovered: boolean;
  };
  /** The incident's alerts, newest first (bounded). */
  alerts: Array<{ alertName: string | null; severity: Severity | null; status: 'firing' | 'resolved' | null; service: string | null; title: string; occurredAt: string }>;
  /** Deployments and code changes of the tenant in the hours before the incident. */
  recentChanges: number;
  /** Whether the tenant has runbooks (for the service, or at all). */
  hasRunbooks: boolean;
  /** Whether the tenant has learned patterns. */
  hasPatterns: boolean;
  /** Whether the incident's service has dependencies in the topology graph. */
  hasTopology: boolean;
}

export interface TriageClassification {
  priority: Severity;
  summary: string;
  confidence: number;
  reasoning: string;
  suggestedAgents: AgentRole[];
}

/** One model call's result with what it cost. */
export interface ModelResult<T> {
  output: T;
  model: string;
  tokensUsed: number;
  costUsd: number;
}

/** What a model sees to write an investigation's conclusion: the agents' findings and the ranked hypotheses. */
export interface SynthesisInput {
  incident: { incidentId: string; title: string; description: string; severity: Severity; service: string | null };
  findings: Array<{ agentRole: string; content: string }>;
  hypotheses: Array<{ statement: string; score: number; status: string; reason: string }>;
  humanContext: string[];
}

export interface SynthesisConclusion {
  rootCause: string;
  confidence: number;
  recommendedActions: string[];
}

/** A language model, or the built-in analyzer behind the same interface. */
export interface ModelProvider {
  readonly name: string;
  triage(input: TriageInput): Promise<ModelResult<TriageClassification>>;
  /**
   * Writes the investigation's conclusion from the findings. `builtin` is the built-in
   * analyzer's conclusion: the built-in provider returns it as it is, a model falls back to it.
   */
  synthesize(input: SynthesisInput, builtin: SynthesisConclusion): Promise<ModelResult<SynthesisConclusion>>;
}
