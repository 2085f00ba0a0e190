/**
 * GitHub events other than push and deployment_status, as changes (never incidents):
 * - `workflow_run` completed with conclusion success, of a workflow whose name or file reads as
 *   a deploy (deploy, release, rollout, publish, CD) → a `deployment` (change_type ci_workflow;
 *   environment from the name or file when it names one). Other runs are ignored.
 * - `deployment` created → a `deployment` (change_type deploy, state created).
 * - `release` published → a `code_change` (change_type release, version = the tag).
 * - `pull_request` closed and merged → a `code_change` (change_type pull_request, or dependency
 *   for Dependabot/Renovate and "Bump X from A to B" / "Update dependency X to vB" titles, with
 *   labels dependency, from, to). Other actions and unmerged closes are ignored.
 * https://docs.github.com/en/webhooks/webhook-events-and-payloads
 */
import { z } from 'zod';
import { nonEmpty, parseTime, parseWith } from '../normalize.js';
import type { ParsedDelivery } from '../types.js';
import { change, environmentFrom, isDeployWorkflow, labelsOf } from './change-common.js';

export const user = z.looseObject({ login: z.string() }).nullish();
export const repository = z.looseObject({
  name: z.string().min(1),
  full_name: z.string().min(1),
  html_url: z.string().nullish(),
  pushed_at: z.union([z.string(), z.number()]).nullish(),
});

const repoRaw = (repo: z.output<typeof repository>) => ({
  name: repo.name,
  full_name: repo.full_name,
  html_url: repo.html_url,
});

const ignored = (reason: string): ParsedDelivery => ({ events: [], ignored: reason });

/**
 * The service a deployment's free-form `payload` names (Spinnaker, Argo Rollouts and in-house
 * tools put it there: `service`, `app`, `application`, `component`); a monorepo's deployment
 * names its service only so.
 */
export function payloadService(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  const p = payload as Record<string, unknown>;
  for (const key of ['service', 'app', 'application', 'component']) {
    const value = nonEmpty(p[key]);
    if (value && value.length <= 200) return value;
  }
  return undefined;
}

const isSha = (text: string | undefined) => text !== undefined && /^[0-9a-f]{40}$/i.test(text);

const workflowRunSchema = z.looseObject({
  action: z.string().min(1),
  workflow_run: z.looseObject({
    id: z.number().optional(),
    name: z.string().nullish(),
    display_title: z.string().nullish(),
    path: z.string().nullish(),
    head_branch: z.string().nullish(),
    head_sha: z.string().min(1),
    run_number: z.number().nullish(),
    event: z.string().nullish(),
    status: z.string().nullish(),
    conclusion: z.string().nullish(),
    html_url: z.string().nullish(),
    updated_at: z.string().nullish(),
    actor: user,
    triggering_actor: user,
    head_commit: z.looseObject({ message: z.string().nullish() }).nullish(),
  }),
  workflow: z.looseObject({ name: z.string().nullish(), path: z.string().nullish() }).nullish(),
  repository,
  sender: user,
});

export function workflowRunEvent(body: unknown): ParsedDelivery {
  const payload = parseWith(workflowRunSchema, body, 'github');
  const run = payload.workflow_run;
  if (payload.action !== 'completed') return ignored(`workflow_run action ${payload.action} is not used`);
  if (run.conclusion !== 'success') return ignored(`workflow_run conclusion ${run.conclusion ?? 'none'} is not used`);
  const name = nonEmpty(run.name) ?? nonEmpty(payload.workflow?.name);
  const path = nonEmpty(run.path) ?? nonEmpty(payload.workflow?.path);
  if (!isDeployWorkflow(name, path)) return ignored('workflow_run of a workflow that does not deploy is not used');
  const repo = payload.repository;
  const environment = environmentFrom(name, path?.split('/').pop(), run.display_title);
  const author = run.triggering_actor?.login ?? run.actor?.login ?? payload.sender?.login;
  const labels = labelsOf({
    change_type: 'ci_workflow',
    repository: repo.full_name,
    workflow: name ?? path,
    workflow_path: path,
    sha: run.head_sha,
    ref: nonEmpty(run.head_branch),
    environment,
    state: 'success',
    version: typeof run.run_number === 'number' ? `run ${run.run_number}` : undefined,
    author,
  });
  const commit = nonEmpty(run.head_commit?.message)?.split('\n', 1)[0];
  return {
    events: [
      change('deployment', {
        service: repo.name,
        title: `Workflow ${name ?? path ?? 'run'} of ${repo.full_name}@${run.head_sha.slice(0, 7)} succeeded${environment ? ` (${environment})` : ''}`,
        parts: [
          `Workflow run${run.id !== undefined ? ` ${run.id}` : ''} of ${name ?? path} on ${run.head_branch ?? run.head_sha} (${run.event ?? 'event'}) completed successfully.`,
          commit && `Head commit: ${commit}`,
          nonEmpty(run.html_url) && `Details: ${run.html_url}`,
        ],
        labels,
        occurredAt: parseTime(run.updated_at, new Date()),
        raw: { action: payload.action, workflow_run: run, workflow: payload.workflow, repository: repoRaw(repo) },
      }),
    ],
  };
}

/** A GitHub deployment object, as the `deployment` and `deployment_status` events both carry it. */
export const deploymentObject = z.looseObject({
  id: z.number().optional(),
  sha: z.string().min(1),
  ref: z.string(),
  task: z.string().nullish(),
  environment: z.string().min(1),
  description: z.string().nullish(),
  creator: user,
  created_at: z.string().nullish(),
  payload: z.unknown().optional(),
});

const deploymentSchema = z.looseObject({
  action: z.string().min(1),
  deployment: deploymentObject,
  repository,
  sender: user,
});

export function deploymentEvent(body: unknown): ParsedDelivery {
  const payload = parseWith(deploymentSchema, body, 'github');
  if (payload.action !== 'created') return ignored(`deployment action ${payload.action} is not used`);
  const { deployment, repository: repo } = payload;
  const author = deployment.creator?.login ?? payload.sender?.login;
  const named = payloadService(deployment.payload);
  const labels = labelsOf({
    change_type: 'deploy',
    repository: repo.full_name,
    environment: deployment.environment,
    state: 'created',
    sha: deployment.sha,
    ref: deployment.ref,
    task: nonEmpty(deployment.task),
    creator: author,
    author,
  });
  return {
    events: [
      change('deployment', {
        service: named ?? repo.name,
        title: `Deployment of ${named ? `${named} from ` : ''}${repo.full_name}@${deployment.sha.slice(0, 7)} to ${deployment.environment}: created`,
        parts: [
          `Deployment${deployment.id !== undefined ? ` ${deployment.id}` : ''} of ${deployment.ref} (${deployment.sha}) to ${deployment.environment} was created${author ? ` by ${author}` : ''}.`,
          nonEmpty(deployment.description),
        ],
        labels,
        occurredAt: parseTime(deployment.created_at, new Date()),
        raw: { action: payload.action, deployment, repository: repoRaw(repo) },
      }),
    ],
  };
}

const releaseSchema = z.looseObject({
  action: z.string().min(1),
  release: z.looseObject({
    id: z.number().optional(),
    tag_name: z.string().min(1),
    name: z.string().nullish(),
    body: z.string().nullish(),
    html_url: z.string().nullish(),
    target_commitish: z.string().nullish(),
    prerelease: z.boolean().nullish(),
    published_at: z.string().nullish(),
    created_at: z.string().nullish(),
    author: user,
  }),
  repository,
  sender: user,
});

export function releaseEvent(body: unknown): ParsedDelivery {
  const payload = parseWith(releaseSchema, body, 'github');
  if (payload.action !== 'published') return ignored(`release action ${payload.action} is not used`);
  const { release, repository: repo } = payload;
  const labels = labelsOf({
    change_type: 'release',
    repository: repo.full_name,
    version: release.tag_name,
    // A release may target a commit rather than a branch.
    ref: isSha(nonEmpty(release.target_commitish)) ? undefined : nonEmpty(release.target_commitish),
    sha: isSha(nonEmpty(release.target_commitish)) ? nonEmpty(release.target_commitish) : undefined,
    prerelease: release.prerelease ? 'true' : undefined,
    author: release.author?.login ?? payload.sender?.login,
  });
  const name = nonEmpty(release.name);
  return {
    events: [
      change('code_change', {
        service: repo.name,
        title: `Release ${release.tag_name} of ${repo.full_name}${name && name !== release.tag_name ? `: ${name}` : ''}`,
        parts: [nonEmpty(release.body), nonEmpty(release.html_url) && `Release: ${release.html_url}`],
        labels,
        occurredAt: parseTime(release.published_at ?? release.created_at, new Date()),
        raw: { action: payload.action, release, repository: repoRaw(repo) },
      }),
    ],
  };
}

const pullRequestSchema = z.looseObject({
  action: z.string().min(1),
  number: z.number().optional(),
  pull_request: z.looseObject({
    number: z.number(),
    title: z.string(),
    body: z.string().nullish(),
    html_url: z.string().nullish(),
    merged: z.boolean().nullish(),
    merged_at: z.string().nullish(),
    closed_at: z.string().nullish(),
    merge_commit_sha: z.string().nullish(),
    user,
    merged_by: user,
    base: z.looseObject({ ref: z.string() }),
    head: z.looseObject({ ref: z.string(), sha: z.string().nullish() }),
    labels: z.array(z.looseObject({ name: z.string() })).nullish(),
    changed_files: z.number().nullish(),
    additions: z.number().nullish(),
    deletions: z.number().nullish(),
  }),
  repository,
  sender: user,
});

const dependencyBots = new Set(['dependabot[bot]', 'renovate[bot]', 'dependabot-preview[bot]']);

/** The dependency a pull request's title bumps: Dependabot's "Bump X from A to B", Renovate's "Update dependency X to vB". */
export function dependencyBump(title: string): { dependency: string; from?: string; to?: string } | undefined {
  const bump = /\bbump\s+(\S+)\s+from\s+(\S+)\s+to\s+(\S+)/i.exec(title);
  if (bump) return { dependency: bump[1]!, from: bump[2]!, to: bump[3]! };
  const update = /\bupdate\s+(?:dependency\s+)?(\S+)\s+(?:from\s+(\S+)\s+)?to\s+(v?\d\S*)/i.exec(title);
  if (update && (/dependency/i.test(title) || update[2]))
    return { dependency: update[1]!, ...(update[2] ? { from: update[2] } : {}), to: update[3]! };
  return undefined;
}

export function pullRequestEvent(body: unknown): ParsedDelivery {
  const payload = parseWith(pullRequestSchema, body, 'github');
  const pr = payload.pull_request;
  if (payload.action !== 'closed') return ignored(`pull_request action ${payload.action} is not used`);
  if (pr.merged !== true) return ignored('pull_request closed without merging is not used');
  const repo = payload.repository;
  const author = pr.user?.login;
  const bump = dependencyBump(pr.title);
  const isDependency = bump !== undefined || (author !== undefined && dependencyBots.has(author));
  const labels = labelsOf({
    change_type: isDependency ? 'dependency' : 'pull_request',
    repository: repo.full_name,
    pull_request: String(pr.number),
    sha: nonEmpty(pr.merge_commit_sha),
    ref: pr.base.ref,
    head_ref: pr.head.ref,
    author,
    merged_by: pr.merged_by?.login,
    dependency: bump?.dependency,
    from: bump?.from,
    to: bump?.to,
    version: bump?.to,
    pr_labels: pr.labels?.map((l) => l.name).join(', '),
  });
  const size =
    typeof pr.changed_files === 'number'
      ? `${pr.changed_files} files changed (+${pr.additions ?? 0} −${pr.deletions ?? 0}).`
      : undefined;
  return {
    events: [
      change('code_change', {
        service: repo.name,
        title: `Merged ${repo.full_name}#${pr.number}: ${pr.title}`,
        parts: [
          `Pull request #${pr.number} (${pr.head.ref} → ${pr.base.ref}) by ${author ?? 'unknown'} merged${pr.merged_by ? ` by ${pr.merged_by.login}` : ''}.`,
          size,
          nonEmpty(pr.body),
          nonEmpty(pr.html_url) && `Pull request: ${pr.html_url}`,
        ],
        labels,
        occurredAt: parseTime(pr.merged_at ?? pr.closed_at, new Date()),
        raw: {
          action: payload.action,
          number: pr.number,
          pull_request: {
            number: pr.number,
            title: pr.title,
            html_url: pr.html_url,
            merged: pr.merged,
            merged_at: pr.merged_at,
            merge_commit_sha: pr.merge_commit_sha,
            user: pr.user,
            merged_by: pr.merged_by,
            base: { ref: pr.base.ref },
            head: { ref: pr.head.ref, sha: pr.head.sha },
            labels: pr.labels?.map((l) => ({ name: l.name })),
          },
          repository: repoRaw(repo),
        },
      }),
    ],
  };
}
