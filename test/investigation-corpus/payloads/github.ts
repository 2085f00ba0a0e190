/**
 * GitHub change deliveries: deployment_status and push through test/scenarios/payloads.ts;
 * workflow_run, deployment, release and pull_request as GitHub's webhook reference shows them.
 */
import { randomUUID } from 'node:crypto';
import { githubDeployment, githubPush } from '../../scenarios/payloads.js';
import { fixture } from '../../helpers/webhooks.js';
import type { Delivery } from '../types.js';
import { hex, iso, numId, shift } from './time.js';

type Extra = Pick<Delivery, 'note'>;
const ORG = 'example-shop';

const recorded = JSON.parse(fixture('github-deployment-status.json')) as Record<string, any>;
function repository(name: string): Record<string, unknown> {
  const full = `${ORG}/${name}`;
  return {
    ...recorded.repository,
    id: numId(full),
    node_id: `R_kgDO${hex(full, 6)}`,
    name,
    full_name: full,
    html_url: `https://github.com/${full}`,
    url: `https://api.github.com/repos/${full}`,
    description: null,
  };
}
const user = (login: string) => ({
  ...recorded.sender,
  login,
  id: numId(login, 8),
  node_id: `U_kgDO${hex(login, 6)}`,
  avatar_url: `https://avatars.githubusercontent.com/u/${numId(login, 8)}?v=4`,
  url: `https://api.github.com/users/${login}`,
  html_url: `https://github.com/${login}`,
  type: login.endsWith('[bot]') ? 'Bot' : 'User',
});
const github = (event: string, body: object, minute: number, extra: Extra): Delivery => ({
  provider: 'github',
  headers: { 'x-github-event': event, 'x-github-delivery': randomUUID() },
  body,
  minute,
  ...(extra.note ? { note: extra.note } : {}),
});

/** deployment_status of a repository named like the service (the classic case, for distractors). */
export function deploymentStatus(
  args: {
    repo: string;
    id: number;
    sha: string;
    at: number;
    state?: string;
    environment?: string;
    description?: string;
  },
  extra: Extra = {},
): Delivery {
  const { at, ...rest } = args;
  const d = githubDeployment({ ...rest, minutes: shift(at) });
  return github('deployment_status', d.body, at, extra);
}

export function push(
  args: {
    repo: string;
    at: number;
    commits: Array<{ id: string; message: string; modified?: string[]; added?: string[] }>;
    ref?: string;
  },
  extra: Extra = {},
): Delivery {
  const { at, ...rest } = args;
  return github('push', githubPush({ ...rest, minutes: shift(at) }).body, at, extra);
}

/** A `workflow_run` completed: a deploy workflow (Actions), which is not a GitHub deployment. */
export function workflowRun(
  args: {
    repo: string;
    workflow: string;
    path?: string;
    sha: string;
    message: string;
    at: number;
    minutesTaken?: number;
    conclusion?: 'success' | 'failure' | 'cancelled';
    branch?: string;
    actor?: string;
    event?: string;
  },
  extra: Extra = {},
): Delivery {
  const full = `${ORG}/${args.repo}`;
  const runId = numId(`${full}:${args.sha}:${args.workflow}`, 10);
  const workflowId = numId(`${full}:${args.workflow}`, 8);
  const started = iso(args.at - (args.minutesTaken ?? 6));
  const actor = user(args.actor ?? 'mchen');
  const path = args.path ?? `.github/workflows/${args.workflow.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.yml`;
  const repo = repository(args.repo);
  return github(
    'workflow_run',
    {
      action: 'completed',
      workflow_run: {
        id: runId,
        name: args.workflow,
        node_id: `WFR_kwLO${hex(String(runId), 8)}`,
        head_branch: args.branch ?? 'main',
        head_sha: args.sha,
        path,
        display_title: args.message.split('\n')[0],
        run_number: runId % 2000,
        event: args.event ?? 'push',
        status: 'completed',
        conclusion: args.conclusion ?? 'success',
        workflow_id: workflowId,
        check_suite_id: runId + 7,
        url: `https://api.github.com/repos/${full}/actions/runs/${runId}`,
        html_url: `https://github.com/${full}/actions/runs/${runId}`,
        pull_requests: [],
        created_at: started,
        updated_at: iso(args.at),
        actor,
        run_attempt: 1,
        run_started_at: started,
        triggering_actor: actor,
        jobs_url: `https://api.github.com/repos/${full}/actions/runs/${runId}/jobs`,
        logs_url: `https://api.github.com/repos/${full}/actions/runs/${runId}/logs`,
        head_commit: {
          id: args.sha,
          tree_id: hex(args.sha + 'tree'),
          message: args.message,
          timestamp: iso(args.at - (args.minutesTaken ?? 6) - 2),
          author: { name: actor.login, email: `${actor.login}@example-shop.com` },
          committer: { name: 'GitHub', email: 'noreply@github.com' },
        },
        repository: repo,
        head_repository: repo,
      },
      workflow: {
        id: workflowId,
        node_id: `W_kwDO${hex(String(workflowId), 8)}`,
        name: args.workflow,
        path,
        state: 'active',
        created_at: '2023-03-02T10:11:12.000Z',
        updated_at: '2025-09-18T08:00:41.000Z',
        url: `https://api.github.com/repos/${full}/actions/workflows/${workflowId}`,
        html_url: `https://github.com/${full}/blob/main/${path}`,
        badge_url: `https://github.com/${full}/workflows/${encodeURIComponent(args.workflow)}/badge.svg`,
      },
      repository: repo,
      organization: recorded.organization,
      sender: actor,
    },
    args.at,
    extra,
  );
}

/** A `deployment` created (the deployment itself, before any status). */
export function deploymentCreated(
  args: {
    repo: string;
    id: number;
    sha: string;
    at: number;
    environment?: string;
    task?: string;
    description?: string;
    payload?: object;
    creator?: string;
  },
  extra: Extra = {},
): Delivery {
  const full = `${ORG}/${args.repo}`;
  const creator = user(args.creator ?? 'github-actions[bot]');
  return github(
    'deployment',
    {
      action: 'created',
      deployment: {
        ...recorded.deployment,
        url: `https://api.github.com/repos/${full}/deployments/${args.id}`,
        id: args.id,
        node_id: `DE_kwDO${hex(String(args.id), 8)}`,
        task: args.task ?? 'deploy',
        original_environment: args.environment ?? 'production',
        environment: args.environment ?? 'production',
        description: args.description ?? null,
        created_at: iso(args.at),
        updated_at: iso(args.at),
        statuses_url: `https://api.github.com/repos/${full}/deployments/${args.id}/statuses`,
        repository_url: `https://api.github.com/repos/${full}`,
        creator,
        sha: args.sha,
        ref: 'main',
        payload: args.payload ?? {},
      },
      repository: repository(args.repo),
      organization: recorded.organization,
      sender: creator,
    },
    args.at,
    extra,
  );
}

/** A `release` published. */
export function release(
  args: { repo: string; tag: string; name?: string; body?: string; sha?: string; at: number; author?: string },
  extra: Extra = {},
): Delivery {
  const full = `${ORG}/${args.repo}`;
  const id = numId(`${full}:${args.tag}`, 9);
  const author = user(args.author ?? 'release-bot[bot]');
  return github(
    'release',
    {
      action: 'published',
      release: {
        url: `https://api.github.com/repos/${full}/releases/${id}`,
        assets_url: `https://api.github.com/repos/${full}/releases/${id}/assets`,
        html_url: `https://github.com/${full}/releases/tag/${args.tag}`,
        id,
        node_id: `RE_kwDO${hex(String(id), 8)}`,
        tag_name: args.tag,
        target_commitish: args.sha ?? 'main',
        name: args.name ?? args.tag,
        draft: false,
        prerelease: false,
        created_at: iso(args.at - 4),
        published_at: iso(args.at),
        author,
        assets: [],
        tarball_url: `https://api.github.com/repos/${full}/tarball/${args.tag}`,
        zipball_url: `https://api.github.com/repos/${full}/zipball/${args.tag}`,
        body: args.body ?? '',
      },
      repository: repository(args.repo),
      organization: recorded.organization,
      sender: author,
    },
    args.at,
    extra,
  );
}

/** A `pull_request` closed and merged (Dependabot and Renovate open these too). */
export function pullRequestMerged(
  args: {
    repo: string;
    number: number;
    title: string;
    body?: string;
    head: string;
    sha: string;
    at: number;
    author?: string;
    mergedBy?: string;
    labels?: string[];
    changedFiles?: number;
    additions?: number;
    deletions?: number;
  },
  extra: Extra = {},
): Delivery {
  const full = `${ORG}/${args.repo}`;
  const id = numId(`${full}#${args.number}`, 10);
  const author = user(args.author ?? 'mchen');
  const merger = user(args.mergedBy ?? 'akumar');
  const base = repository(args.repo);
  const headSha = hex(`${args.sha}:head`);
  return github(
    'pull_request',
    {
      action: 'closed',
      number: args.number,
      pull_request: {
        url: `https://api.github.com/repos/${full}/pulls/${args.number}`,
        id,
        node_id: `PR_kwDO${hex(String(id), 8)}`,
        html_url: `https://github.com/${full}/pull/${args.number}`,
        diff_url: `https://github.com/${full}/pull/${args.number}.diff`,
        number: args.number,
        state: 'closed',
        locked: false,
        title: args.title,
        user: author,
        body: args.body ?? null,
        created_at: iso(args.at - 26 * 60),
        updated_at: iso(args.at),
        closed_at: iso(args.at),
        merged_at: iso(args.at),
        merge_commit_sha: args.sha,
        labels: (args.labels ?? []).map((name) => ({ id: numId(name, 9), name, color: '0366d6', default: false })),
        draft: false,
        head: { label: `${ORG}:${args.head}`, ref: args.head, sha: headSha, user: author, repo: base },
        base: { label: `${ORG}:main`, ref: 'main', sha: hex(`${args.sha}:base`), user: user(ORG), repo: base },
        author_association: args.author?.endsWith('[bot]') ? 'NONE' : 'MEMBER',
        merged: true,
        mergeable: null,
        merged_by: merger,
        comments: 1,
        commits: 1,
        additions: args.additions ?? 12,
        deletions: args.deletions ?? 4,
        changed_files: args.changedFiles ?? 1,
      },
      repository: base,
      organization: recorded.organization,
      sender: merger,
    },
    args.at,
    extra,
  );
}
