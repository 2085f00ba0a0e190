/**
 * The change agents: what changed for the service and its dependencies before the first alert.
 * The deployment agent reads what altered what runs (deploys, deploy workflows, Argo CD and Flux
 * syncs, flag flips, config and infrastructure applies); the code-change agent what changed in
 * repositories (pushes, merged pull requests, releases, dependency bumps).
 */
import type { AgentReport, InvestigationRequest } from '../../analysis/investigation-types.js';
import type { ChangeObservation } from '../../analysis/investigation/index.js';
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
import { agentChanges, agentScene } from './scene.js';
import { consultSkills, withSkillNotes } from './skills-findings.js';

/** Deployments of the service and of its dependencies in the 6 h before the first alert. */
export async function deploymentAgent(ctx: InvestigationContext, req: InvestigationRequest): Promise<AgentReport> {
  const scene = await agentScene(ctx, req);
  heartbeat({ step: 'scene' });
  const consulting = consultSkills(ctx, req, 'deployment', scene, CHANGE_LOOKBACK_MS);
  consulting.catch(() => undefined); // awaited below; not unhandled if the read fails first
  const rows = await agentChanges(ctx, scene, 'deployment');
  heartbeat({ step: 'deployments', count: rows.length });
  // GitHub sends one event per status, Argo CD one per trigger, a flag may flip twice: keep the
  // latest state of each deployment, sync of one revision, or flag.
  const latest = new Map<string, { row: IngestedEventRow; hops: number }>();
  for (const r of rows) {
    const c = toChangeObservation(r.row, r.hops);
    const key =
      c.deploymentId ??
      (c.flag
        ? `flag:${c.provider}:${c.flag}:${c.environment}`
        : c.sha
          ? `${c.changeType}:${c.service}:${c.sha}:${c.environment}`
          : c.eventId);
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
    const what = describeDeployment(c, row);
    const relation = `${hops === 0 ? '' : ` — a dependency of ${serviceName(scene)} (${hops} hop${hops === 1 ? '' : 's'})`}${tieNote(c)}`;
    drafts.push({
      sourceId: row.id,
      type: 'deployment',
      source: row.provider,
      summary: `${what}, ${timing(minutes)}${relation}${c.description ? `. ${c.description}` : ''}`,
      severity: changeRelevance(minutes, hops, /^(failure|failed|error|inactive|degraded)$/i.test(c.state ?? '')),
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
      ? `${lines.length} deployment(s), sync(s) or flag change(s) of ${scope} in the 6 h before the first alert (${hhmm(scene.firstAlertAt)}): ${lines.join('; ')}.`
      : `No deployment, sync or flag change of ${scope} in the 6 h before the first alert (${hhmm(scene.firstAlertAt)}).`;
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
  const rows = await agentChanges(ctx, scene, 'code_change');
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
    const what = `${describeCodeChange(c, row)}, ${timing(minutes)}`;
    const relation = `${hops === 0 ? '' : ` — a dependency of ${serviceName(scene)}`}${tieNote(c)}`;
    drafts.push({
      sourceId: row.id,
      type: 'code_change',
      source: row.provider,
      summary: `${what}${relation}${shown.length > 0 ? `: ${shown.join('; ')}` : c.changeType === 'push' ? ': no commits' : ''}`,
      severity: (() => {
        const s = changeRelevance(minutes, hops, false);
        return s === 'critical' ? 'high' : s;
      })(),
      occurredAt: row.occurredAt,
      rawSnippet: rawExcerpt(row),
    });
    lines.push(`${what}${relation}${shown.length > 0 ? `: ${shown.slice(0, 2).join('; ')}` : ''}`);
  }
  const consulted = await consulting;
  const ids = await storeEvidence(ctx, req, 'code_change', [...consulted.drafts, ...drafts]);
  const content =
    lines.length > 0
      ? `${lines.length} code change(s) (pushes, merged pull requests, releases, dependency bumps) in the 6 h before the first alert: ${lines.join(' | ')}.`
      : `No code change of ${serviceName(scene)}${scene.dependencies.length > 0 ? ' or its dependencies' : ''} in the 6 h before the first alert.`;
  return report(
    'code_change',
    withSkillNotes(content, consulted.notes),
    ids,
    lines.length > 0 || consulted.drafts.length > 0,
  );
}

const sha = (c: ChangeObservation) => (c.sha ? ` at ${sha7(c.sha)}` : '');
const inEnv = (c: ChangeObservation) => (c.environment ? ` in ${c.environment}` : '');
const by = (c: ChangeObservation) => (c.author ? ` by ${c.author}` : '');
const toolNames: Record<string, string> = {
  argocd: 'Argo CD',
  flux: 'Flux',
  launchdarkly: 'LaunchDarkly',
  unleash: 'Unleash',
  flagsmith: 'Flagsmith',
};

/** One line naming what a change that altered what runs did: a deploy, a sync, a flag flip. */
export function describeDeployment(c: ChangeObservation, row: IngestedEventRow): string {
  const tool = toolNames[c.provider] ?? c.provider;
  switch (c.changeType) {
    case 'feature_flag':
      return `Feature flag ${c.flag ?? '?'} ${c.state ?? 'changed'}${inEnv(c)}${by(c)} (${tool}${c.version ? `, value ${clip(c.version, 60)}` : ''})`;
    case 'gitops': {
      const source = c.version
        ? ` chart ${row.labels.chart ?? ''} ${c.version}`.replace('  ', ' ')
        : c.repository
          ? ` from ${c.repository}${c.paths[0] ? `/${c.paths[0]}` : ''}`
          : '';
      return `${tool} sync of ${c.service ?? '?'}${source}${sha(c)}: ${c.state ?? 'applied'}${row.labels.health ? `, ${row.labels.health}` : ''}`;
    }
    case 'ci_workflow':
      return `Deploy workflow "${row.labels.workflow ?? c.title}" of ${c.repository ?? c.service}${sha(c)}${inEnv(c)}: ${c.state ?? 'success'}`;
    case 'config':
    case 'infrastructure':
      return `${c.changeType === 'config' ? 'Config' : 'Infrastructure'} change of ${c.service ?? c.repository ?? '?'}${inEnv(c)}${by(c)}: ${clip(c.title, 120)}`;
    default:
      return `Deployment ${c.deploymentId ?? ''} of ${c.service}${c.sha ? ` (sha ${sha7(c.sha)})` : ''} to ${c.environment ?? '?'}: ${c.state ?? 'deployed'}`.replace(
        'Deployment  of',
        'Deployment of',
      );
  }
}

/** One line naming what a repository change was: a push (and what its paths touch), a merged PR, a release, a bump. */
export function describeCodeChange(c: ChangeObservation, row: IngestedEventRow): string {
  const repo = c.repository ?? c.service ?? '?';
  const branch = c.ref ? ` ${c.ref.replace(/^refs\/heads\//, '')}` : '';
  const pr = row.labels.pull_request ? ` #${row.labels.pull_request}` : '';
  switch (c.changeType) {
    case 'release':
      return `Release ${c.version ?? '?'} of ${repo}${by(c)}`;
    case 'pull_request':
      return `Merged pull request${pr} of ${repo} into${branch}${by(c)}: "${clip(c.title.replace(/^Merged [^:]*: /, ''), 100)}"`;
    case 'dependency':
      if (row.labels.dependency)
        return `Dependency bump of ${row.labels.dependency}${row.labels.from ? ` from ${row.labels.from}` : ''}${row.labels.to ? ` to ${row.labels.to}` : ''} in ${repo}${pr ? ` (merged pull request${pr})` : ''}${by(c)}`;
      return `Dependency change in ${repo}${branch}${sha(c)}${by(c)} (${c.paths.slice(0, 3).join(', ') || 'lockfiles'})`;
    case 'gitops':
    case 'infrastructure':
      return `${c.changeType === 'gitops' ? 'GitOps' : 'Infrastructure (Terraform)'} push to ${repo}${branch}${c.sha ? ` (head ${sha7(c.sha)})` : ''}${by(c)} touching ${c.paths.slice(0, 3).join(', ') || '?'}${c.paths.length > 3 ? ` and ${c.paths.length - 3} more` : ''}`;
    default:
      return `Push to ${repo}${branch}${c.sha ? ` (head ${sha7(c.sha)})` : ''}`;
  }
}

/** How a change reached this incident when its service is not the one it names. */
function tieNote(c: ChangeObservation): string {
  switch (c.matchedBy) {
    case 'repository':
      return ` (tied by its repository ${c.repository})`;
    case 'path':
      return ` (tied by its path${c.paths[0] ? ` ${c.paths[0]}` : 's'})`;
    case 'mention':
      return ` (tied by ${c.flag ? `flag ${c.flag}` : (c.service ?? 'its name')} in the incident's alerts)`;
    default:
      return '';
  }
}
