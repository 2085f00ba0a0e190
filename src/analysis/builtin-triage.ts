import { severities, type Severity } from '../db/schema/incidents.js';
import type { AgentRole, TriageClassification, TriageInput } from './types.js';

export const BUILTIN_MODEL = 'builtin-analyzer-1';

const rank = (s: Severity) => severities.length - 1 - severities.indexOf(s); // low 0 … critical 3
const fromRank = (r: number): Severity => severities[severities.length - 1 - Math.max(0, Math.min(3, r))]!;

const LOG_WORDS =
  /\b(error|errors|exception|5\d\d|500s|timeout|timed out|crash|crashloop|panic|oom|killed|refused|stack ?trace|log|logs|failed|failing)\b/i;
const METRIC_WORDS =
  /\b(latency|p9\d|cpu|memory|disk|saturation|throughput|rate|threshold|lag|usage|utili[sz]ation|heap|connections?|pool|queue depth|above|below|%)/i;
const CHANGE_WORDS =
  /\b(deploy|deployed|deployment|release|rollout|rolled out|version|upgrade|migration|config(uration)? change|commit|merge)\b/i;

/**
 * The built-in triage: deterministic rules over the incident, its alerts and its service.
 * Priority is the highest severity the alerts report (or the incident's), raised one level for
 * a service rated 8–10 or an alert repeating at least 10 times, lowered one level when every
 * alert has recovered. Agents are suggested from the signals present.
 */
export function builtinTriage(input: TriageInput): TriageClassification {
  const { incident, alerts } = input;
  const reasons: string[] = [];
  const text = `${incident.title}\n${incident.description}\n${alerts.map((a) => `${a.alertName ?? ''} ${a.title}`).join('\n')}`;

  let base = rank(incident.severity);
  const firing = alerts.filter((a) => a.status !== 'resolved');
  const alertSeverities = alerts.map((a) => a.severity).filter((s): s is Severity => s !== null);
  if (alertSeverities.length > 0) {
    const highest = Math.max(...alertSeverities.map(rank));
    if (highest !== base) reasons.push(`the alerts report ${fromRank(highest)} (incident was ${incident.severity})`);
    base = Math.max(base, highest);
  } else {
    reasons.push(`severity ${incident.severity} as reported`);
  }
  let priority = base;
  if (incident.criticality !== null && incident.criticality >= 8) {
    priority += 1;
    reasons.push(`service ${incident.service} is rated ${incident.criticality}/10: raised one level`);
  }
  if (incident.occurrenceCount >= 10) {
    priority += 1;
    reasons.push(`the alert fired ${incident.occurrenceCount} times: raised one level`);
  }
  if (incident.recovered && firing.length === 0 && alerts.length > 0) {
    priority -= 1;
    reasons.push('every alert has recovered: lowered one level');
  }
  const finalPriority = fromRank(priority);

  const agents: AgentRole[] = ['alerts'];
  const signals: string[] = [];
  if (input.recentChanges > 0 || CHANGE_WORDS.test(text)) {
    agents.push('deployment', 'code_change');
    signals.push(
      input.recentChanges > 0
        ? `${input.recentChanges} deployment or code change event(s) shortly before`
        : 'the text mentions a change',
    );
  }
  if (LOG_WORDS.test(text)) {
    agents.push('logs');
    signals.push('errors or failures are mentioned');
  }
  if (METRIC_WORDS.test(text)) {
    agents.push('metrics');
    signals.push('a metric or threshold is involved');
  }
  if (input.hasTopology) {
    agents.push('topology');
    signals.push(`${incident.service} has dependencies in the topology graph`);
  }
  if (input.hasPatterns) agents.push('knowledge');
  if (input.hasRunbooks) agents.push('runbook');

  // Confidence grows with corroboration: several alerts, an identified service, explicit severities.
  let confidence = 0.55;
  if (alerts.length > 0) confidence += 0.1;
  if (alerts.length > 1 || incident.occurrenceCount > 1) confidence += 0.05;
  if (incident.service) confidence += 0.1;
  if (incident.criticality !== null) confidence += 0.05;
  if (signals.length >= 2) confidence += 0.05;
  if (incident.source === 'manual' && alerts.length === 0) confidence -= 0.1;
  confidence = Math.round(Math.min(0.95, Math.max(0.3, confidence)) * 100) / 100;

  const where = incident.service ? ` on ${incident.service}` : '';
  const owner = incident.ownerTeam ? ` (owner: ${incident.ownerTeam})` : '';
  const alertPart = alerts.length > 0 ? `; ${alerts.length} alert(s), ${firing.length} firing` : '';
  const summary = `${finalPriority[0]!.toUpperCase()}${finalPriority.slice(1)} priority${where}${owner}: ${incident.title}${alertPart}`;
  const reasoning = [
    `Priority ${finalPriority}: ${reasons.join('; ')}.`,
    `Agents: ${agents.join(', ')}${signals.length > 0 ? ` because ${signals.join('; ')}` : ''}.`,
    `Confidence ${confidence} from ${alerts.length} alert(s)${incident.service ? ', a known service' : ''}${incident.criticality !== null ? ', its topology node' : ''}.`,
  ].join(' ');
  return {
    priority: finalPriority,
    summary: summary.slice(0, 500),
    confidence,
    reasoning,
    suggestedAgents: [...new Set(agents)],
  };
}
