import type { Severity } from '../db/schema/incidents.js';

/** The specialist agents an investigation can run (identifiers used in `suggestedAgents`). */
export const agentRoles = [
  'deployment',
  'code_change',
  'logs',
  'metrics',
  'alerts',
  'topology',
  'knowledge',
  'runbook',
] as const;
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
  alerts: Array<{
    alertName: string | null;
    severity: Severity | null;
    status: 'firing' | 'resolved' | null;
    service: string | null;
    title: string;
    occurredAt: string;
  }>;
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
  /**
   * Answers an assistant chat question from the retrieved facts, naming the facts it used. The
   * built-in responder answers deterministically; a model falls back to it on any failure.
   */
  answer(input: ChatInput): Promise<ModelResult<ChatAnswer>>;
}

/** The kinds of record the assistant cites. */
export const chatSourceTypes = ['incident', 'investigation', 'evidence', 'pattern', 'runbook'] as const;
export type ChatSourceType = (typeof chatSourceTypes)[number];

/**
 * One retrieved record the assistant may cite. An investigation's id is its incident's id (one
 * investigation per incident), so a fact is identified by its type and id together.
 */
export interface ChatFact {
  type: ChatSourceType;
  id: string;
  title: string;
  service: string | null;
  /** ISO 8601: incident creation, investigation completion, evidence occurrence, pattern last seen, runbook update. */
  at: string | null;
  /** The incident an investigation or evidence item belongs to (the incident itself for an incident). */
  incidentId: string | null;
  /** The record in one or two sentences (status, severity, summary, confidence…). */
  summary: string;
  /** Root cause stated by an incident, investigation or pattern. */
  rootCause: string | null;
  /** Ordered actions: recommended actions, a pattern's fix, a runbook's steps. */
  actions: string[];
  /**
   * How well it matches the question's keywords, relative to the best match (0 to 1); 1 for the
   * incident the question is about (anchored, followed up on, or the count's incidents).
   */
  relevance: number;
}

/** What the question asks, as the retrieval understood it (the structured part of the answer). */
export type ChatIntent =
  | {
      /** `count`: how many incidents; `list`: which incidents. `total` is exact, the facts list the newest. */
      kind: 'count' | 'list';
      service: string | null;
      severity: string | null;
      subject: string[];
      period: { label: string; from: string; to: string } | null;
      total: number;
    }
  | { kind: 'cause'; latest: boolean; subjectIncidentId: string | null }
  | { kind: 'fix'; subjectIncidentId: string | null }
  | { kind: 'runbook' }
  | { kind: 'pattern' }
  | { kind: 'evidence'; subjectIncidentId: string | null }
  | { kind: 'search' };

export interface ChatInput {
  question: string;
  intent: ChatIntent;
  /** The incident the conversation is anchored to, when it is. */
  anchorIncidentId: string | null;
  /** The conversation so far, oldest first (bounded). */
  history: Array<{ role: 'user' | 'assistant'; content: string }>;
  /** Retrieved facts, best first. */
  facts: ChatFact[];
}

export interface ChatAnswer {
  reply: string;
  /** Exactly the facts the reply used, in the order it used them. */
  sources: Array<{ type: ChatSourceType; id: string }>;
}
