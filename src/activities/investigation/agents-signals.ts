/** The signal agents: log lines, metric signals and the alerts of the incident and around it. */
import type { AgentReport, InvestigationRequest } from '../../analysis/investigation-types.js';
import {
  CORRELATION_AFTER_MS,
  heartbeat,
  hhmm,
  lower,
  MAX_ITEMS_PER_AGENT,
  oneLine,
  SIGNAL_LOOKBACK_MS,
  type EvidenceDraft,
  type InvestigationContext,
} from './common.js';
import { report, serviceName, storeEvidence } from './evidence.js';
import { alertSeverity, firstPerFingerprint, logLine, metricLine } from './observations.js';
import { rawExcerpt } from './payloads.js';
import { agentCorrelated, agentScene } from './scene.js';
import { consultSkills, withSkillNotes } from './skills-findings.js';

/** The incident's own alerts and the correlated ones of its service and of dependencies up to 2 hops away. */
export async function alertsNearby(ctx: InvestigationContext, req: InvestigationRequest) {
  const scene = await agentScene(ctx, req);
  heartbeat({ step: 'scene' });
  const correlated = await agentCorrelated(ctx, scene);
  heartbeat({ step: 'alerts', count: correlated.length });
  const near = new Set([
    lower(scene.service),
    ...scene.dependencies.filter((d) => d.hops <= 2).map((d) => lower(d.name)),
  ]);
  return { scene, candidates: [...scene.ownAlerts, ...correlated.filter((a) => near.has(lower(a.service)))] };
}

/** Alerts of the incident and of its dependencies that carry log lines (exceptions, error messages). */
export async function logsAgent(ctx: InvestigationContext, req: InvestigationRequest): Promise<AgentReport> {
  const { scene, candidates } = await alertsNearby(ctx, req);
  const consulted = await consultSkills(ctx, req, 'logs', scene, SIGNAL_LOOKBACK_MS);
  const drafts: EvidenceDraft[] = [];
  for (const { first } of firstPerFingerprint(candidates)) {
    const line = logLine(first);
    if (!line) continue;
    const own = first.incidentId === req.incidentId;
    drafts.push({
      sourceId: first.id,
      type: 'log',
      source: first.provider,
      summary: `${first.service ?? 'unknown service'} (${first.provider}${own ? '' : ', related'}): ${oneLine(line)}`,
      severity: own ? alertSeverity(first.severity) : 'high',
      occurredAt: first.occurredAt,
      rawSnippet: rawExcerpt(first),
    });
  }
  const ids = await storeEvidence(ctx, req, 'logs', [...consulted.drafts, ...drafts]);
  const content =
    drafts.length > 0
      ? `${drafts.length} log excerpt(s) in the alert payloads: ${drafts
          .slice(0, 4)
          .map((d) => d.summary)
          .join(' | ')}.`
      : `No log lines (exceptions, error messages) in the alerts of ${serviceName(scene)} or its dependencies.`;
  return report(
    'logs',
    withSkillNotes(content, consulted.notes),
    ids,
    drafts.length > 0 || consulted.drafts.length > 0,
  );
}

/** Metric alerts: thresholds, values, rates and the queries behind them. */
export async function metricsAgent(ctx: InvestigationContext, req: InvestigationRequest): Promise<AgentReport> {
  const { scene, candidates } = await alertsNearby(ctx, req);
  const consulted = await consultSkills(ctx, req, 'metrics', scene, SIGNAL_LOOKBACK_MS);
  const drafts: EvidenceDraft[] = [];
  for (const { first } of firstPerFingerprint(candidates)) {
    const line = metricLine(first);
    if (!line) continue;
    const own = first.incidentId === req.incidentId;
    drafts.push({
      sourceId: first.id,
      type: 'metric',
      source: first.provider,
      summary: `${first.alertName ?? first.title} on ${first.service ?? 'unknown service'}${own ? '' : ' (related)'}: ${oneLine(line)}`,
      severity: own ? alertSeverity(first.severity) : 'medium',
      occurredAt: first.occurredAt,
      rawSnippet: rawExcerpt(first),
    });
  }
  const ids = await storeEvidence(ctx, req, 'metrics', [...consulted.drafts, ...drafts]);
  const content =
    drafts.length > 0
      ? `${drafts.length} metric signal(s): ${drafts
          .slice(0, 4)
          .map((d) => d.summary)
          .join(' | ')}.`
      : `No metric alert (threshold, value or rate) on ${serviceName(scene)} or its dependencies.`;
  return report(
    'metrics',
    withSkillNotes(content, consulted.notes),
    ids,
    drafts.length > 0 || consulted.drafts.length > 0,
  );
}

/** The incident's alerts (with their firing/resolved history) and the alerts correlated in time across services. */
export async function alertsAgent(ctx: InvestigationContext, req: InvestigationRequest): Promise<AgentReport> {
  const scene = await agentScene(ctx, req);
  heartbeat({ step: 'scene' });
  const correlated = await agentCorrelated(ctx, scene);
  heartbeat({ step: 'alerts', count: correlated.length });
  const depHops = new Map(scene.dependencies.map((d) => [lower(d.name), d.hops]));
  const drafts: EvidenceDraft[] = [];
  const ownLines: string[] = [];
  for (const { first, rows } of firstPerFingerprint(scene.ownAlerts)) {
    const firing = rows.filter((r) => r.status !== 'resolved').length;
    const resolved = rows.length - firing;
    const line = `${first.alertName ?? first.title} on ${first.service ?? 'unknown service'} (${first.provider}): fired ${firing}×${resolved > 0 ? `, resolved ${resolved}×` : ''} since ${hhmm(first.occurredAt)}`;
    ownLines.push(line);
    drafts.push({
      sourceId: first.id,
      type: 'alert',
      source: first.provider,
      summary: `${line}. ${first.title}`,
      severity: alertSeverity(first.severity),
      occurredAt: first.occurredAt,
      rawSnippet: rawExcerpt(first),
    });
  }
  const others = firstPerFingerprint(correlated)
    .map(({ first, rows }) => {
      const name = lower(first.service);
      const relation =
        name === lower(scene.service) && name !== ''
          ? 'same service'
          : depHops.has(name)
            ? `dependency, ${depHops.get(name)} hop(s)`
            : 'other service';
      return { first, rows, relation };
    })
    .filter(
      (o) =>
        o.relation !== 'other service' ||
        Math.abs(o.first.occurredAt.getTime() - scene.firstAlertAt.getTime()) <= CORRELATION_AFTER_MS,
    );
  const otherLines: string[] = [];
  for (const { first, rows, relation } of others.slice(0, MAX_ITEMS_PER_AGENT - drafts.length)) {
    const resolvedOnly = rows.every((r) => r.status === 'resolved');
    const line = `${first.alertName ?? first.title} on ${first.service ?? 'unknown service'} (${relation}) at ${hhmm(first.occurredAt)}`;
    otherLines.push(line);
    drafts.push({
      sourceId: first.id,
      type: 'alert',
      source: first.provider,
      summary: `Correlated: ${line}${resolvedOnly ? ', resolved' : ''}. ${first.title}`,
      severity: resolvedOnly ? 'info' : relation === 'other service' ? 'low' : 'high',
      occurredAt: first.occurredAt,
      rawSnippet: rawExcerpt(first),
    });
  }
  const ids = await storeEvidence(ctx, req, 'alerts', drafts);
  const content = `${ownLines.length} alert(s) on the incident: ${ownLines.join('; ') || 'none'}. ${
    otherLines.length > 0
      ? `${otherLines.length} correlated alert(s) around ${hhmm(scene.firstAlertAt)}: ${otherLines.slice(0, 6).join('; ')}.`
      : 'No correlated alert on other services around it.'
  }`;
  return report('alerts', content, ids, drafts.length > 0);
}
