/**
 * The built-in investigation analyzer: deterministic rules that turn what the specialist agents
 * observed (the incident's alerts, correlated alerts, deployments and code changes, the topology
 * around the service, matching runbooks, and human context) into competing hypotheses, ranks
 * them, and writes the root cause narrative, a calibrated confidence and ordered concrete actions.
 * Pure functions: no I/O, no clock (times come in the input), so every decision is unit-testable.
 *
 * The public API only; the rules' internals stay unexported here.
 */
export {
  BUILTIN_INVESTIGATION_MODEL,
  changeTypes,
  hypothesisKinds,
  type ChangeMatch,
  type ChangeType,
  type AlertObservation,
  type ChangeObservation,
  type CommitObservation,
  type ContextNote,
  type DependencyObservation,
  type Hypothesis,
  type HypothesisKind,
  type InvestigationAnalysis,
  type InvestigationInput,
  type PatternObservation,
  type RunbookObservation,
  type SkillFinding,
  type TopologyObservation,
} from './types.js';
export { alertDetail, distinctiveWords, formatDuration, hostsIn, proximity } from './text.js';
export { flapStats, restrictToRoles } from './view.js';
export { PATTERN_SUPPORT, knownPatternScore } from './patterns.js';
export { CAUSE_CUES, contextEffect } from './context.js';
export { pickRunbookStep, runbookFit } from './runbooks.js';
export { analyzeInvestigation } from './ranking.js';
