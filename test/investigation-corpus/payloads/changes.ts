/**
 * Change deliveries in the vendors' documented formats: GitHub (deployment_status and push through
 * test/scenarios/payloads.ts; workflow_run, deployment, release, pull_request as GitHub's webhook
 * reference shows them), LaunchDarkly (the audit-log entry its webhooks post), Unleash (the event
 * format its webhook addon posts without a body template), Flagsmith (environment webhook,
 * FLAG_UPDATED) and Flux (notification-controller's event to a `generic` provider).
 */
import { randomUUID } from 'node:crypto';
import { githubDeployment, githubPush } from '../../scenarios/payloads.js';
import { fixture } from '../../helpers/webhooks.js';
import type { Delivery } from '../types.js';
import { epochMs, hex, iso, numId, shift } from './time.js';

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

/** LaunchDarkly: the audit-log entry its webhook posts when a flag changes in an environment. */
export function launchDarkly(
  args: {
    flag: string;
    flagName?: string;
    project?: string;
    environment?: string;
    action: 'updateOn' | 'updateFallthrough' | 'updateRules' | 'updateOffVariation' | 'updateTargets';
    /** The markdown description LaunchDarkly writes ("- Turned off the flag"…). */
    description: string;
    titleVerb: string;
    at: number;
    member?: { email: string; firstName: string; lastName: string };
    comment?: string;
  },
  extra: Extra = {},
): Delivery {
  const project = args.project ?? 'default';
  const env = args.environment ?? 'production';
  const member = args.member ?? { email: 'priya.nair@example-shop.com', firstName: 'Priya', lastName: 'Nair' };
  const id = hex(`${args.flag}:${args.at}`, 24);
  const memberId = hex(member.email, 24);
  const name = args.flagName ?? args.flag;
  return {
    provider: 'launchdarkly',
    headers: { 'x-ld-signature': hex(id, 64) },
    body: {
      _links: {
        canonical: { href: `/api/v2/flags/${project}/${args.flag}`, type: 'application/json' },
        parent: { href: '/api/v2/auditlog', type: 'application/json' },
        self: { href: `/api/v2/auditlog/${id}`, type: 'application/json' },
        site: { href: `/${project}/${env}/features/${args.flag}`, type: 'text/html' },
      },
      _id: id,
      _accountId: hex('account', 24),
      date: epochMs(args.at),
      accesses: [{ action: args.action, resource: `proj/${project}:env/${env}:flag/${args.flag}` }],
      kind: 'flag',
      name,
      description: args.description,
      shortDescription: args.description.replace(/^- /, ''),
      ...(args.comment ? { comment: args.comment } : {}),
      member: {
        _links: {
          parent: { href: '/api/v2/members', type: 'application/json' },
          self: { href: `/api/v2/members/${memberId}`, type: 'application/json' },
        },
        _id: memberId,
        email: member.email,
        firstName: member.firstName,
        lastName: member.lastName,
      },
      titleVerb: args.titleVerb,
      title: `[${member.firstName} ${member.lastName}](mailto:${member.email}) ${args.titleVerb} [${name}](https://app.launchdarkly.com/${project}/${env}/features/${args.flag}) in \`${env[0]!.toUpperCase()}${env.slice(1)}\``,
      target: {
        _links: { canonical: { href: `/api/v2/flags/${project}/${args.flag}`, type: 'application/json' } },
        name,
        resources: [`proj/${project}:env/${env}:flag/${args.flag}`],
      },
      currentVersion: 0,
      previousVersion: 0,
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/** Unleash: the event its webhook addon posts with no body template (the Unleash event format). */
export function unleash(
  args: {
    type:
      | 'feature-environment-enabled'
      | 'feature-environment-disabled'
      | 'feature-strategy-update'
      | 'feature-strategy-add';
    feature: string;
    project?: string;
    environment?: string;
    at: number;
    createdBy?: string;
    data?: Record<string, unknown>;
    preData?: Record<string, unknown> | null;
  },
  extra: Extra = {},
): Delivery {
  const id = numId(`${args.feature}:${args.at}`, 6);
  return {
    provider: 'unleash',
    body: {
      id,
      type: args.type,
      createdBy: args.createdBy ?? 'jonas.berg@example-shop.com',
      createdAt: iso(args.at),
      createdByUserId: 17,
      data: args.data ?? null,
      preData: args.preData ?? null,
      tags: [],
      featureName: args.feature,
      project: args.project ?? 'default',
      environment: args.environment ?? 'production',
      label: args.type === 'feature-environment-disabled' ? 'Flag disabled' : 'Flag updated',
      summary: null,
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/** Flagsmith: an environment webhook, FLAG_UPDATED with the new and previous state. */
export function flagsmith(
  args: {
    feature: string;
    description?: string;
    enabled: boolean;
    wasEnabled: boolean;
    value?: string | number | null;
    previousValue?: string | number | null;
    at: number;
    changedBy?: string;
    environment?: string;
  },
  extra: Extra = {},
): Delivery {
  const feature = {
    created_date: '2025-06-02T09:14:51.226718Z',
    default_enabled: false,
    description: args.description ?? null,
    id: numId(args.feature, 5),
    initial_value: null,
    name: args.feature,
    project: { id: 412, name: 'Example Shop' },
    type: args.value === undefined ? 'STANDARD' : 'CONFIG',
  };
  const state = (enabled: boolean, value: unknown) => ({
    enabled,
    environment: { id: 23, name: args.environment ?? 'Production' },
    feature,
    feature_segment: null,
    feature_state_value: value ?? null,
    id: numId(`${args.feature}:state`, 6),
    identity: null,
    identity_identifier: null,
  });
  return {
    provider: 'flagsmith',
    body: {
      data: {
        changed_by: args.changedBy ?? 'Lena Fischer',
        new_state: state(args.enabled, args.value),
        previous_state: state(args.wasEnabled, args.previousValue),
        timestamp: iso(args.at),
      },
      event_type: 'FLAG_UPDATED',
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/** Flux: notification-controller's event as a `generic` provider posts it. */
export function flux(
  args: {
    kind: 'Kustomization' | 'HelmRelease';
    name: string;
    namespace: string;
    reason: string;
    message: string;
    severity?: 'info' | 'error';
    revision?: string;
    at: number;
  },
  extra: Extra = {},
): Delivery {
  const helm = args.kind === 'HelmRelease';
  return {
    provider: 'flux',
    headers: { 'gotk-component': helm ? 'helm-controller' : 'kustomize-controller' },
    body: {
      involvedObject: {
        apiVersion: helm ? 'helm.toolkit.fluxcd.io/v2' : 'kustomize.toolkit.fluxcd.io/v1',
        kind: args.kind,
        name: args.name,
        namespace: args.namespace,
        uid: `${hex(args.name, 8)}-${hex(args.name + '1', 4)}-4${hex(args.name + '2', 3)}-b${hex(args.name + '3', 3)}-${hex(args.name + '4', 12)}`,
      },
      severity: args.severity ?? 'info',
      timestamp: iso(args.at),
      message: args.message,
      reason: args.reason,
      metadata: args.revision ? { [`${helm ? 'helm' : 'kustomize'}.toolkit.fluxcd.io/revision`]: args.revision } : {},
      reportingController: helm ? 'helm-controller' : 'kustomize-controller',
      reportingInstance: `${helm ? 'helm' : 'kustomize'}-controller-7f9c6d5b8-${hex(args.name, 5)}`,
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/**
 * Argo CD: the argocd-notifications webhook body from the template docs/integrations/argocd.md
 * gives (the Application's name, project, destination, source, sync, health and operation state;
 * a field the Application lacks is Go's `<no value>`).
 */
export function argocd(
  args: {
    app: string;
    project?: string;
    namespace: string;
    repoURL: string;
    path?: string;
    chart?: string;
    targetRevision?: string;
    revision: string;
    phase?: 'Succeeded' | 'Failed' | 'Error' | 'Running';
    health?: 'Healthy' | 'Progressing' | 'Degraded';
    message?: string;
    at: number;
  },
  extra: Extra = {},
): Delivery {
  return {
    provider: 'argocd',
    body: {
      app: args.app,
      project: args.project ?? 'default',
      destination: { namespace: args.namespace, server: 'https://kubernetes.default.svc', name: '<no value>' },
      source: {
        repoURL: args.repoURL,
        path: args.path ?? '<no value>',
        targetRevision: args.targetRevision ?? 'HEAD',
        chart: args.chart ?? '<no value>',
      },
      sync: { revision: args.revision, status: args.phase === 'Failed' ? 'OutOfSync' : 'Synced' },
      health: { status: args.health ?? 'Healthy', message: '<no value>' },
      operationState: {
        phase: args.phase ?? 'Succeeded',
        message: args.message ?? 'successfully synced (all tasks run)',
        startedAt: iso(args.at - 1),
        finishedAt: iso(args.at),
      },
      argocdUrl: 'https://argocd.example-shop.com',
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}

/** The generic webhook's change shape (docs/integrations/generic.md): config pushes, scripts, tools without an integration. */
export function genericChange(
  args: {
    kind: 'deploy' | 'config' | 'flag' | 'infrastructure' | 'dependency' | string;
    service: string;
    title: string;
    description?: string;
    author?: string;
    paths?: string[];
    url?: string;
    at: number;
  },
  extra: Extra = {},
): Delivery {
  return {
    provider: 'generic',
    headers: { 'x-delivery-id': `change-${hex(`${args.service}:${args.title}:${args.at}`, 16)}` },
    body: {
      type: 'change',
      change: {
        kind: args.kind,
        service: args.service,
        title: args.title,
        ...(args.description ? { description: args.description } : {}),
        author: args.author ?? 'deploy-bot',
        environment: 'production',
        ...(args.paths ? { paths: args.paths } : {}),
        occurredAt: iso(args.at),
        ...(args.url ? { url: args.url } : {}),
      },
    },
    minute: args.at,
    ...(extra.note ? { note: extra.note } : {}),
  };
}
