/** The context agents: failing upstream dependencies, learned patterns and matching runbooks. */
import type { AgentReport, InvestigationRequest } from '../../analysis/investigation-types.js';
import { findRunbook } from '../../db/repositories/runbooks.js';
import { clip, heartbeat, lower, RAW_SNIPPET_MAX, type EvidenceDraft, type InvestigationContext } from './common.js';
import { report, serviceName, storeEvidence } from './evidence.js';
import { matchingPatterns, matchingRunbooks } from './knowledge.js';
import { searchText } from './payloads.js';
import { agentCorrelated, agentScene } from './scene.js';
import { topologyOf } from './topology.js';

/** Upstream dependencies that are failing themselves (and shared by other alerting services), and the downstream blast radius. */
export async function topologyAgent(ctx: InvestigationContext, req: InvestigationRequest): Promise<AgentReport> {
  const scene = await agentScene(ctx, req);
  heartbeat({ step: 'scene' });
  if (!scene.node) {
    return report(
      'topology',
      `${serviceName(scene)} is not in the topology graph: no dependency or blast radius to examine.`,
      [],
      false,
    );
  }
  const correlated = await agentCorrelated(ctx, scene);
  const topology = await topologyOf(ctx, scene, correlated);
  heartbeat({ step: 'topology' });
  const failing = topology.dependencies.filter((d) => d.alerting || d.alertingDependents.length >= 2);
  const drafts: EvidenceDraft[] = failing.map((d) => {
    const id = scene.dependencies.find((x) => x.name === d.name)!.id;
    const shared =
      d.alertingDependents.length >= 2
        ? `; common dependency of ${d.alertingDependents.length} alerting services (${d.alertingDependents.join(', ')})`
        : '';
    const state = d.alerting
      ? `is failing: ${d.alertCount} alert(s) or open incident(s) (${d.alertNames.slice(0, 3).join(', ')})${d.firstAlertAt ? ` since ${d.firstAlertAt.slice(11, 16)} UTC` : ''}`
      : 'has no alert of its own';
    return {
      sourceId: `dependency:${id}`,
      type: 'alert' as const,
      source: 'topology',
      summary: `${d.name} (${d.type}), which ${serviceName(scene)} depends on (${d.hops} hop${d.hops === 1 ? '' : 's'}), ${state}${shared}`,
      severity: d.alerting && d.alertingDependents.length >= 2 ? 'critical' : 'high',
      occurredAt: d.firstAlertAt ? new Date(d.firstAlertAt) : scene.firstAlertAt,
      rawSnippet: clip(
        JSON.stringify({
          dependency: d.name,
          type: d.type,
          hops: d.hops,
          alerting: d.alerting,
          alerts: d.alertNames,
          alertingDependents: d.alertingDependents,
          path: `${serviceName(scene)} → ${d.name}`,
        }),
        RAW_SNIPPET_MAX,
      ),
    };
  });
  const ids = await storeEvidence(ctx, req, 'topology', drafts);
  const deps = topology.dependencies.map((d) => `${d.name} (${d.hops})`).join(', ');
  const radius = topology.dependents
    .slice(0, 8)
    .map((d) => `${d.name} (${d.hops} hop(s), ${d.impact})`)
    .join(', ');
  const content = [
    topology.dependencies.length > 0
      ? `${serviceName(scene)} depends on ${topology.dependencies.length} service(s): ${deps}.`
      : `${serviceName(scene)} depends on nothing in the graph.`,
    failing.length > 0
      ? `Failing upstream: ${drafts.map((d) => d.summary).join(' | ')}.`
      : 'No upstream dependency is failing.',
    topology.dependents.length > 0
      ? `Blast radius: ${topology.dependents.length} service(s) depend on it: ${radius}.`
      : 'Nothing depends on it (no downstream blast radius).',
  ].join(' ');
  return report('topology', content, ids, failing.length > 0);
}

/** Learned failure patterns matching the incident: a stable one is strong evidence, an emerging one weak. */
export async function knowledgeAgent(ctx: InvestigationContext, req: InvestigationRequest): Promise<AgentReport> {
  const scene = await agentScene(ctx, req);
  heartbeat({ step: 'scene' });
  const found = await matchingPatterns(ctx, req);
  heartbeat({ step: 'patterns', count: found.length });
  const drafts: EvidenceDraft[] = found.map(({ pattern: p, sharedAlerts }) => ({
    sourceId: p.id,
    type: 'runbook' as const,
    source: 'knowledge',
    summary: `Learned ${p.status} pattern '${p.title}' (${p.occurrences} occurrence(s), confidence ${p.confidence.toFixed(2)})${sharedAlerts.length > 0 ? ` shares ${sharedAlerts.join(', ')}` : ''}: ${p.rootCause}${p.fix.length > 0 ? ` Fixed before by: ${p.fix.slice(0, 2).join('; ')}` : ''}`,
    severity: p.status === 'stable' ? 'high' : p.confidence >= 0.5 ? 'medium' : 'low',
    occurredAt: p.lastSeenAt,
    rawSnippet: JSON.stringify({
      patternId: p.id,
      title: p.title,
      status: p.status,
      category: p.category,
      confidence: p.confidence,
      occurrences: p.occurrences,
      alertNames: p.alertNames,
      rootCause: p.rootCause,
      fix: p.fix,
    }),
  }));
  const ids = await storeEvidence(ctx, req, 'knowledge', drafts);
  const content =
    found.length > 0
      ? `${found.length} learned pattern(s) match ${serviceName(scene)}: ${found.map(({ pattern: p }) => `'${p.title}' (${p.status}, confidence ${p.confidence.toFixed(2)}, seen ${p.occurrences}×)`).join('; ')}.`
      : `No learned pattern matches ${serviceName(scene)} and its alerts.`;
  return report('knowledge', content, ids, found.length > 0);
}

/** Runbooks for the service, its failing dependencies, and the incident's keywords, with their steps. */
export async function runbookAgent(ctx: InvestigationContext, req: InvestigationRequest): Promise<AgentReport> {
  const scene = await agentScene(ctx, req);
  heartbeat({ step: 'scene' });
  const correlated = await agentCorrelated(ctx, scene);
  const failingDeps = scene.dependencies
    .filter((d) => correlated.some((a) => a.status !== 'resolved' && lower(a.service) === lower(d.name)))
    .map((d) => d.name);
  const relatedTexts = correlated.filter((a) => failingDeps.some((d) => lower(d) === lower(a.service))).map(searchText);
  const found = await matchingRunbooks(ctx, scene, failingDeps, relatedTexts);
  heartbeat({ step: 'runbooks', count: found.length });
  const drafts: EvidenceDraft[] = [];
  for (const r of found) {
    const row = await findRunbook(ctx.db, req.tenantId, r.runbookId);
    const steps = r.steps
      .slice(0, 6)
      .map((s) => `${s.number}. ${s.text}`)
      .join(' ');
    const why = [
      r.service ? `service ${r.service}` : '',
      r.matchedKeywords.length > 0 ? `keywords ${r.matchedKeywords.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join('; ');
    drafts.push({
      sourceId: r.runbookId,
      type: 'runbook',
      source: 'runbooks',
      summary: `Runbook '${r.title}' matches (${why || 'service'}; score ${r.score}): ${r.steps.length} step(s) — ${steps}`,
      severity:
        r.service && [scene.service, ...failingDeps].some((s) => lower(s) === lower(r.service))
          ? 'high'
          : r.score >= 4
            ? 'medium'
            : 'low',
      occurredAt: row?.updatedAt ?? scene.firstAlertAt,
      rawSnippet: row?.content ?? steps,
    });
  }
  const ids = await storeEvidence(ctx, req, 'runbook', drafts);
  const content =
    found.length > 0
      ? `${found.length} matching runbook(s): ${found.map((r) => `'${r.title}'${r.service ? ` (${r.service})` : ''} with ${r.steps.length} step(s)`).join('; ')}.`
      : `No runbook matches ${serviceName(scene)}${failingDeps.length > 0 ? ` or ${failingDeps.join(', ')}` : ''} or the incident's keywords.`;
  return report('runbook', content, ids, found.length > 0);
}
