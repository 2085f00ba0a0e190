/** The change agents: deployments and pushes of the service and its dependencies before the first alert. */
import type { AgentReport, InvestigationRequest } from '../../analysis/investigation-types.js';
import type { IngestedEventRow } from '../../db/schema/ingestion.js';
import {
  CHANGE_LOOKBACK_MS,
  clip,
  heartbeat,
  hhmm,
  sha7,
  type EvidenceDraft,
  type InvestigationContext,
} from './common.js';
import { before, report, serviceName, storeEvidence, timing } from './evidence.js';
import { changeRelevance, toChangeObservation } from './observations.js';
import { rawExcerpt } from './payloads.js';
import { agentScene, recentChanges } from './scene.js';
import { consultSkills, withSkillNotes } from './skills-findings.js';

/** Deployments of the service and of its dependencies in the 6 h before the first alert. */
export async function deploymentAgent(ctx: InvestigationContext, req: InvestigationRequest): Promise<AgentReport> {
  const scene = await agentScene(ctx, req);
  heartbeat({ step: 'scene' });
  const consulting = consultSkills(ctx, req, 'deployment', scene, CHANGE_LOOKBACK_MS);
  consulting.catch(() => undefined); // awaited below; not unhandled if the read fails first
  const rows = await recentChanges(ctx, scene, 'deployment');
  heartbeat({ step: 'deployments', count: rows.length });
  // GitHub sends one event per status: keep the latest state of each deployment.
  const latest = new Map<string, { row: IngestedEventRow; hops: number }>();
  for (const r of rows) {
    const c = toChangeObservation(r.row, r.hops);
    const key = c.deploymentId ?? `${c.service}:${c.sha}:${c.environment}`;
    const seen = latest.get(key);
    if (!seen || r.row.occurredAt >= seen.row.occurredAt) latest.set(key, r);
  }
  const drafts: EvidenceDraft[] = [];
  const lines: string[] = [];
  for (const { row, hops } of [...latest.values()].sort(
    (a, b) => b.row.occurredAt.getTime() - a.row.occurredAt.getTime(),
  )) {
    const c = toChangeObservation(row, hops);
    const minutes = before(scene, row.occurredAt);
    const what =
      `Deployment ${c.deploymentId ?? ''} of ${c.service}${c.sha ? ` (sha ${sha7(c.sha)})` : ''} to ${c.environment ?? '?'}: ${c.state ?? 'deployed'}`.replace(
        'Deployment  of',
        'Deployment of',
      );
    const relation = hops === 0 ? '' : ` — a dependency of ${serviceName(scene)} (${hops} hop${hops === 1 ? '' : 's'})`;
    drafts.push({
      sourceId: row.id,
      type: 'deployment',
      source: row.provider,
      summary: `${what}, ${timing(minutes)}${relation}${c.description ? `. ${c.description}` : ''}`,
      severity: changeRelevance(minutes, hops, /^(failure|error|inactive)$/i.test(c.state ?? '')),
      occurredAt: row.occurredAt,
      rawSnippet: rawExcerpt(row),
    });
    lines.push(`${what}, ${timing(minutes)}${relation}`);
  }
  const consulted = await consulting;
  const ids = await storeEvidence(ctx, req, 'deployment', [...consulted.drafts, ...drafts]);
  const scope =
    scene.dependencies.length > 0
      ? `${serviceName(scene)} or its ${scene.dependencies.length} dependencies`
      : serviceName(scene);
  const content =
    lines.length > 0
      ? `${lines.length} deployment(s) of ${scope} in the 6 h before the first alert (${hhmm(scene.firstAlertAt)}): ${lines.join('; ')}.`
      : `No deployment of ${scope} in the 6 h before the first alert (${hhmm(scene.firstAlertAt)}).`;
  return report(
    'deployment',
    withSkillNotes(content, consulted.notes),
    ids,
    lines.length > 0 || consulted.drafts.length > 0,
  );
}

/** Pushes (commits) to the service's and its dependencies' repositories before the first alert. */
export async function codeChangeAgent(ctx: InvestigationContext, req: InvestigationRequest): Promise<AgentReport> {
  const scene = await agentScene(ctx, req);
  heartbeat({ step: 'scene' });
  const consulting = consultSkills(ctx, req, 'code_change', scene, CHANGE_LOOKBACK_MS);
  consulting.catch(() => undefined); // awaited below; not unhandled if the read fails first
  const rows = await recentChanges(ctx, scene, 'code_change');
  heartbeat({ step: 'pushes', count: rows.length });
  const drafts: EvidenceDraft[] = [];
  const lines: string[] = [];
  for (const { row, hops } of [...rows].reverse()) {
    const c = toChangeObservation(row, hops);
    const minutes = before(scene, row.occurredAt);
    const commits = c.commits.filter((m) => !/^merge (pull request|branch)/i.test(m.message));
    const shown = (commits.length > 0 ? commits : c.commits)
      .slice(0, 5)
      .map(
        (m) =>
          `${sha7(m.id)} "${clip(m.message.split('\n', 1)[0]!.trim(), 100)}"${m.files.length > 0 ? ` (${m.files.slice(0, 3).join(', ')})` : ''}`,
      );
    const what = `Push to ${c.repository ?? c.service}${c.ref ? ` ${c.ref.replace(/^refs\/heads\//, '')}` : ''}${c.sha ? ` (head ${sha7(c.sha)})` : ''}, ${timing(minutes)}`;
    const relation = hops === 0 ? '' : ` — a dependency of ${serviceName(scene)}`;
    drafts.push({
      sourceId: row.id,
      type: 'code_change',
      source: row.provider,
      summary: `${what}${relation}: ${shown.join('; ') || 'no commits'}`,
      severity: (() => {
        const s = changeRelevance(minutes, hops, false);
        return s === 'critical' ? 'high' : s;
      })(),
      occurredAt: row.occurredAt,
      rawSnippet: rawExcerpt(row),
    });
    lines.push(`${what}${relation}: ${shown.slice(0, 2).join('; ')}`);
  }
  const consulted = await consulting;
  const ids = await storeEvidence(ctx, req, 'code_change', [...consulted.drafts, ...drafts]);
  const content =
    lines.length > 0
      ? `${lines.length} push(es) in the 6 h before the first alert: ${lines.join(' | ')}.`
      : `No code change of ${serviceName(scene)}${scene.dependencies.length > 0 ? ' or its dependencies' : ''} in the 6 h before the first alert.`;
  return report(
    'code_change',
    withSkillNotes(content, consulted.notes),
    ids,
    lines.length > 0 || consulted.drafts.length > 0,
  );
}
