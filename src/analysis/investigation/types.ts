/** The analyzer's input and output shapes: what the agents observed, and the ranked hypotheses. */
import type { Severity } from '../../db/schema/incidents.js';
import type { AgentRole } from '../types.js';

export const BUILTIN_INVESTIGATION_MODEL = 'builtin-analyzer-1';

/** One alert as the agents saw it (the incident's own, or a correlated one). */
export interface AlertObservation {
  eventId: string;
  provider: string;
  incidentId: string | null;
  alertName: string;
  service: string | null;
  severity: Severity | null;
  status: 'firing' | 'resolved';
  occurredAt: string;
  title: string;
  /** Searchable text: description, annotations, exception messages, metric query (bounded). */
  text: string;
  labels: Record<string, string>;
}

export interface CommitObservation {
  id: string;
  message: string;
  files: string[];
}

/**
 * What sort of change an ingested change event is (its `change_type` label; absent on rows from
 * before it existed: `deploy` for deployments, `push` for code changes).
 */
export const changeTypes = [
  'deploy',
  'release',
  'ci_workflow',
  'pull_request',
  'push',
  'gitops',
  'feature_flag',
  'config',
  'dependency',
  'infrastructure',
] as const;
export type ChangeType = (typeof changeTypes)[number];

/** How a change was tied to the incident's service or dependency. */
export type ChangeMatch = 'service' | 'repository' | 'path' | 'mention';

/** A change of the incident's service (hops 0) or of a dependency (hops ≥ 1). */
export interface ChangeObservation {
  eventId: string;
  /** `deployment`: changed what runs (deploys, syncs, flag flips, config applies); `code_change`: a repository change. */
  kind: 'deployment' | 'code_change';
  changeType: ChangeType;
  /** How it was tied to `service`. */
  matchedBy: ChangeMatch;
  /** Files or paths it touched (bounded). */
  paths: string[];
  /** The feature flag it flipped (feature_flag changes). */
  flag: string | null;
  /** The version, tag or chart version it brought (when the tool says). */
  version: string | null;
  author: string | null;
  provider: string;
  service: string | null;
  repository: string | null;
  occurredAt: string;
  deploymentId: string | null;
  sha: string | null;
  ref: string | null;
  environment: string | null;
  /** Deployment state (`success`, `failure`, …); null for pushes. */
  state: string | null;
  description: string | null;
  commits: CommitObservation[];
  title: string;
  hops: number;
}

export interface DependencyObservation {
  name: string;
  type: string;
  hops: number;
  /** Firing alerts or open incidents on it around the incident. */
  alerting: boolean;
  alertCount: number;
  firstAlertAt: string | null;
  alertNames: string[];
  /** Alert texts on it (bounded), for the failure mode. */
  alertTexts: string[];
  /** Alerting services (the incident's own included) that depend on it, directly or transitively. */
  alertingDependents: string[];
}

export interface TopologyObservation {
  /** Whether the incident's service is a node of the graph. */
  known: boolean;
  serviceType: string | null;
  dependencies: DependencyObservation[];
  dependents: Array<{ name: string; hops: number; impact: 'high' | 'medium' | 'low' }>;
}

export interface RunbookObservation {
  runbookId: string;
  title: string;
  service: string | null;
  tags: string[];
  steps: Array<{ number: number; text: string }>;
  score: number;
  matchedKeywords: string[];
}

export interface ContextNote {
  seq: number;
  content: string;
}

/** A learned pattern whose symptoms (service, alert names) the incident shows (knowledge agent). */
export interface PatternObservation {
  patternId: string;
  title: string;
  /** Root-cause category: a hypothesis kind, or `other`. */
  category: string;
  rootCause: string;
  /** The actions that resolved it before. */
  fix: string[];
  status: 'emerging' | 'stable';
  confidence: number;
  occurrences: number;
  /** Share of alert names in common (0.5 for a service-only match). */
  overlap: number;
}

export interface InvestigationInput {
  incident: {
    incidentId: string;
    title: string;
    description: string;
    service: string | null;
    severity: Severity;
    /** The first firing alert of the incident (its creation time when it has none). */
    firstAlertAt: string;
    occurrenceCount: number;
    recovered: boolean;
  };
  /** The agents that ran: signals of the others are not used. */
  roles: AgentRole[];
  /** The incident's own alerts, firing and resolved. */
  alerts: AlertObservation[];
  /** Other alerts of the tenant around the first alert (other services, other incidents). */
  correlated: AlertObservation[];
  changes: ChangeObservation[];
  topology: TopologyObservation;
  runbooks: RunbookObservation[];
  context: ContextNote[];
  /** Learned patterns matching the incident's symptoms, best first (absent: none). */
  patterns?: PatternObservation[];
  /** What the tenant's skills answered the agents (absent: none). */
  findings?: SkillFinding[];
}

/**
 * A skill's answer to an agent about the incident's service (logs, metrics, changes), read as
 * text: its signals count like those of the service's own alerts.
 */
export interface SkillFinding {
  /** The evidence item's source id (`skill:<skillId>:<run>`). */
  sourceId: string;
  agentRole: AgentRole;
  skill: string;
  occurredAt: string;
  text: string;
}

export const hypothesisKinds = [
  'bad_deploy',
  'upstream_deploy',
  'config_change',
  'memory_leak',
  'connection_pool',
  'disk_full',
  'expired_certificate',
  'dns_failure',
  'third_party_outage',
  'rate_limited',
  'feature_flag',
  'dependency_bump',
  'consumer_lag',
  'broker_alarm',
  'runaway_job',
  'cache_eviction',
  'retry_storm',
  'oom_input',
  'expired_credentials',
  'hot_key',
  'noisy_neighbor',
  'clock_skew',
  'fd_exhaustion',
  'worker_saturation',
  'failed_job',
  'datasource_failure',
  'cpu_limit',
  'replication_slot',
  'replication_lag',
  'io_saturation',
  'node_failure',
  'connection_hog',
  'cache_failure',
  'upstream_failure',
  'traffic_spike',
  'flapping_alert',
  'known_pattern',
  'undetermined',
] as const;
export type HypothesisKind = (typeof hypothesisKinds)[number];

export interface Hypothesis {
  kind: HypothesisKind;
  /** One line: what went wrong, naming the service, change, dependency or host. */
  statement: string;
  /** What the hypothesis blames: a service, dependency, host or vendor. */
  subject: string;
  score: number;
  status: 'kept' | 'discarded';
  /** Why it was kept, or why it was discarded. */
  reason: string;
  support: string[];
  against: string[];
  /** The ingested event ids (alerts, deployments, pushes) it rests on. */
  sources: string[];
  /** Human context that moved its score (+/-). */
  contextAdjustment: number;
  rootCause: string;
  actions: string[];
  /** Words a runbook for this cause would use (runbook matching). */
  keywords: string[];
  /** For change hypotheses: the sha or event of the change, to tell specific from generic ones. */
  changeRef?: string;
  /** A stable learned pattern's past fix leads the actions (before any runbook step). */
  fixFirst?: boolean;
  /**
   * What kind of evidence it rests on: `direct` (the alerts name the mechanism or the thing),
   * `temporal` (a change shortly before), `topological` (a failing neighbour). Ranking lets
   * direct evidence beat a change that is only earlier in time.
   */
  evidence?: 'direct' | 'temporal' | 'topological';
  /** Its probability of being the cause (the kept one's is the confidence); set by the ranking. */
  probability?: number;
  /** For change hypotheses: how long before the first alert the change went live. */
  minutesBefore?: number;
}

export interface InvestigationAnalysis {
  rootCause: string;
  confidence: number;
  recommendedActions: string[];
  /** Every hypothesis considered, best first; the first is kept. */
  hypotheses: Hypothesis[];
  /** A readable account of the ranking (stored as the synthesis finding). */
  summary: string;
}
