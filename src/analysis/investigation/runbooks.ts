/** Runbooks: which one fits the kept hypothesis, and the step that acts on its cause. */
import { lower } from './text.js';
import { type Hypothesis, type HypothesisKind, type RunbookObservation } from './types.js';

// ---------------------------------------------------------------------------------------------
// Runbooks

const REMEDIATION_VERBS =
  /\b(terminate|kill|restart|roll ?back|revert|fail ?over|promote|renew|rotate|free|delete|purge|clear|flush|scale|increase|raise|lower|drain|recycle|disable|enable|switch|reload|restore|expand|resize|evict|reduce|cap|warm|redeploy|point|repoint|queue|requeue|retry)\b/i;
const DIAGNOSTIC_VERBS =
  /^\s*(check|verify|look|confirm|inspect|observe|review|find|identify|open|see|watch|page|notify|announce)\b/i;

/** How well a runbook fits a hypothesis: its subject as the runbook's service, and its keywords. */
export function runbookFit(runbook: RunbookObservation, h: Hypothesis, service: string | null): number {
  const text = `${runbook.title}\n${runbook.tags.join(' ')}`.toLowerCase();
  const steps = runbook.steps
    .map((s) => s.text)
    .join('\n')
    .toLowerCase();
  const keywordHits = h.keywords.filter((k) => k && text.includes(k)).length;
  const stepHits = h.keywords.filter((k) => k && steps.includes(k)).length;
  const forSubject = runbook.service !== null && lower(runbook.service) === lower(h.subject);
  const forService = runbook.service !== null && lower(runbook.service) === lower(service);
  if (keywordHits === 0 && !forSubject) return 0;
  return keywordHits * 2 + Math.min(2, stepHits) + (forSubject ? 3 : forService ? 1 : 0);
}

/** The step that acts on the cause: remediation verbs and the hypothesis' words, not diagnostics. */
export function pickRunbookStep(
  runbook: RunbookObservation,
  h: Pick<Hypothesis, 'keywords'>,
): { number: number; text: string } | undefined {
  let best: { number: number; text: string } | undefined;
  let bestScore = -Infinity;
  for (const step of runbook.steps) {
    const text = step.text.toLowerCase();
    let score = h.keywords.filter((k) => k && text.includes(k)).length;
    if (REMEDIATION_VERBS.test(step.text)) score += 2;
    if (DIAGNOSTIC_VERBS.test(step.text)) score -= 1;
    if (score > bestScore) {
      best = step;
      bestScore = score;
    }
  }
  return best;
}

/** Kinds whose own first action (roll back, revert, renew) beats any runbook step. */
const OWN_ACTION_FIRST = new Set<HypothesisKind>([
  'bad_deploy',
  'upstream_deploy',
  'config_change',
  'memory_leak',
  'flapping_alert',
  'known_pattern',
  // Mechanisms whose own action names the thing to act on (the flag, the job, the slot, the key):
  // a runbook's generic step comes second.
  'feature_flag',
  'dependency_bump',
  'consumer_lag',
  'broker_alarm',
  'runaway_job',
  'cache_eviction',
  'retry_storm',
  'oom_input',
  'expired_credentials',
  'failed_job',
  'hot_key',
  'clock_skew',
  'noisy_neighbor',
  'replication_slot',
  'replication_lag',
  'io_saturation',
  'cpu_limit',
  'rate_limited',
  'node_failure',
  'connection_hog',
]);

export function recommendedActions(
  top: Hypothesis,
  runbooks: RunbookObservation[],
  service: string | null,
  runnerUp: Hypothesis | undefined,
): string[] {
  const fitting = runbooks
    .map((r) => ({ runbook: r, fit: runbookFit(r, top, service) }))
    .filter((r) => r.fit > 0 && r.runbook.steps.length > 0)
    .sort((a, b) => b.fit - a.fit || b.runbook.score - a.runbook.score);
  const actions: string[] = [];
  const best = fitting[0]?.runbook;
  const step = best ? pickRunbookStep(best, top) : undefined;
  const runbookAction =
    best && step
      ? `Follow runbook '${best.title}' step ${step.number}: ${step.text}${lower(step.text).includes(lower(top.subject)) ? '' : ` (${top.subject})`}`
      : undefined;
  if (runbookAction && !OWN_ACTION_FIRST.has(top.kind) && !top.fixFirst) {
    actions.push(runbookAction, ...top.actions);
  } else {
    actions.push(top.actions[0]!);
    if (runbookAction) actions.push(runbookAction);
    actions.push(...top.actions.slice(1));
  }
  if (best && step) {
    const next = best.steps.find((s) => s.number === step.number + 1);
    if (next && REMEDIATION_VERBS.test(next.text))
      actions.push(`Then runbook '${best.title}' step ${next.number}: ${next.text}`);
  }
  if (runnerUp && runnerUp.score >= 0.45 && runnerUp.kind !== 'undetermined') {
    actions.push(`If that does not resolve it, check the runner-up: ${runnerUp.statement}`);
  }
  return [...new Set(actions)].slice(0, 6);
}
