/**
 * GitHub repository / organization webhooks: every kind of change a repository ships.
 * https://docs.github.com/en/webhooks/webhook-events-and-payloads
 *
 * The event type is the `x-github-event` header (required); the delivery id is `x-github-delivery`.
 * Every change's service is the repository's name (a deployment's: the `service`, `app`,
 * `application` or `component` of its payload, when it names one); the investigation also ties
 * it to services by repository and paths (ADR 0266).
 * - `deployment_status` → one `deployment` (change_type deploy): labels environment, state, sha,
 *   ref, repository, creator; occurredAt = the status's updated_at.
 * - `push` → one `code_change`: labels ref, repository, head_commit, sha, pusher, author, paths
 *   (added/modified/removed of its commits); change_type from the paths (gitops, infrastructure,
 *   dependency, else push); the description lists the commits.
 * - `workflow_run`, `deployment`, `release`, `pull_request`: github-events.ts.
 * - `ping` and every other event type are acknowledged and ignored.
 */
import { z } from 'zod';
import { clip, makeDescription, nonEmpty, parseTime, parseWith, TITLE_MAX } from '../normalize.js';
import { labelsOf, pathsLabel, pushChangeType } from './change-common.js';
import {
  deploymentEvent as deploymentCreated,
  payloadService,
  pullRequestEvent,
  releaseEvent,
  deploymentObject,
  repository,
  user,
  workflowRunEvent,
} from './github-events.js';
import { type NormalizedChange, type ParsedDelivery, PayloadError, type WebhookProvider } from '../types.js';

const deploymentStatusSchema = z.looseObject({
  action: z.string().optional(),
  deployment_status: z.looseObject({
    id: z.number().optional(),
    state: z.string().min(1),
    environment: z.string().nullish(),
    description: z.string().nullish(),
    target_url: z.string().nullish(),
    environment_url: z.string().nullish(),
    log_url: z.string().nullish(),
    creator: user,
    created_at: z.string().nullish(),
    updated_at: z.string().nullish(),
  }),
  deployment: deploymentObject,
  repository,
  sender: user,
});

const commit = z.looseObject({
  id: z.string().min(1),
  message: z.string(),
  timestamp: z.string().nullish(),
  url: z.string().nullish(),
  author: z.looseObject({ name: z.string().nullish(), username: z.string().nullish() }).nullish(),
  added: z.array(z.string()).nullish(),
  modified: z.array(z.string()).nullish(),
  removed: z.array(z.string()).nullish(),
});

const pushSchema = z.looseObject({
  ref: z.string().min(1),
  before: z.string().optional(),
  after: z.string().optional(),
  created: z.boolean().optional(),
  deleted: z.boolean().optional(),
  forced: z.boolean().optional(),
  compare: z.string().nullish(),
  commits: z.array(commit).default([]),
  head_commit: commit.nullish(),
  repository,
  pusher: z.looseObject({ name: z.string().min(1), email: z.string().nullish() }),
  sender: user,
});

/** The paths are listed by the commits already; the label line would repeat them all. */
function labelsWithoutPaths(labels: Record<string, string>): Record<string, string> {
  const { paths: _paths, ...rest } = labels;
  return rest;
}

function deploymentEvent(body: unknown): NormalizedChange {
  const payload = parseWith(deploymentStatusSchema, body, 'github');
  const { deployment, deployment_status: status, repository: repo } = payload;
  const environment = nonEmpty(status.environment) ?? deployment.environment;
  const creator = deployment.creator?.login ?? status.creator?.login ?? payload.sender?.login;
  const named = payloadService(deployment.payload);
  const labels: Record<string, string> = {
    change_type: 'deploy',
    environment,
    state: status.state,
    sha: deployment.sha,
    ref: deployment.ref,
    repository: repo.full_name,
    ...(creator ? { creator, author: creator } : {}),
  };
  const link = nonEmpty(status.target_url) ?? nonEmpty(status.log_url);
  const url = nonEmpty(status.environment_url);
  return {
    kind: 'deployment',
    service: named ?? repo.name,
    title: clip(
      `Deployment of ${repo.full_name}@${deployment.sha.slice(0, 7)} to ${environment}: ${status.state}`,
      TITLE_MAX,
    ),
    description: makeDescription(
      [
        `Deployment${deployment.id !== undefined ? ` ${deployment.id}` : ''} of ${deployment.ref} (${deployment.sha}) to ${environment} is ${status.state}.`,
        nonEmpty(status.description),
        nonEmpty(deployment.description),
        link && `Details: ${link}`,
        url && `Environment: ${url}`,
      ],
      labels,
    ),
    labels,
    occurredAt: parseTime(status.updated_at ?? status.created_at, new Date()),
    raw: {
      action: payload.action,
      deployment_status: status,
      deployment,
      repository: { name: repo.name, full_name: repo.full_name, html_url: repo.html_url },
      sender: payload.sender ? { login: payload.sender.login } : undefined,
    },
  };
}

function pushEvent(body: unknown): NormalizedChange {
  const payload = parseWith(pushSchema, body, 'github');
  const repo = payload.repository;
  const branch = payload.ref.replace(/^refs\/(heads|tags)\//, '');
  const headId = payload.head_commit?.id ?? (payload.deleted ? undefined : nonEmpty(payload.after));
  const paths = payload.commits.flatMap((c) => [...(c.added ?? []), ...(c.modified ?? []), ...(c.removed ?? [])]);
  const headAuthor = payload.head_commit?.author;
  const labels = labelsOf({
    change_type: payload.deleted ? 'push' : pushChangeType(paths),
    ref: payload.ref,
    repository: repo.full_name,
    head_commit: headId,
    sha: headId,
    pusher: payload.pusher.name,
    author: nonEmpty(headAuthor?.username) ?? nonEmpty(headAuthor?.name) ?? payload.pusher.name,
    paths: pathsLabel(paths),
  });
  const count = payload.commits.length;
  let title: string;
  if (payload.deleted) title = `Push to ${repo.full_name}: ${branch} deleted by ${payload.pusher.name}`;
  else
    title = `Push to ${repo.full_name}@${branch}: ${count} commit${count === 1 ? '' : 's'} by ${payload.pusher.name}${payload.forced ? ' (forced)' : ''}`;
  const commitLines = payload.commits.map((c) => {
    const firstLine = c.message.split('\n', 1)[0]?.trim() ?? '';
    const author = c.author?.username ?? c.author?.name;
    return `- ${c.id.slice(0, 7)} ${firstLine}${author ? ` (${author})` : ''}`;
  });
  const compare = nonEmpty(payload.compare);
  return {
    kind: 'code_change',
    service: repo.name,
    title: clip(title, TITLE_MAX),
    description: makeDescription(
      [commitLines.length > 0 ? `Commits:\n${commitLines.join('\n')}` : undefined, compare && `Compare: ${compare}`],
      labelsWithoutPaths(labels),
    ),
    labels,
    occurredAt: parseTime(repo.pushed_at, parseTime(payload.head_commit?.timestamp, new Date())),
    raw: {
      ref: payload.ref,
      before: payload.before,
      after: payload.after,
      created: payload.created,
      deleted: payload.deleted,
      forced: payload.forced,
      compare: payload.compare,
      commits: payload.commits,
      head_commit: payload.head_commit,
      pusher: payload.pusher,
      repository: { name: repo.name, full_name: repo.full_name, html_url: repo.html_url },
    },
  };
}

export const githubProvider: WebhookProvider = {
  name: 'github',
  parse(body, header): ParsedDelivery {
    const event = nonEmpty(header('x-github-event'));
    const deliveryId = nonEmpty(header('x-github-delivery'));
    if (event === undefined) {
      throw new PayloadError('github delivery has no event type', [
        { path: 'headers.x-github-event', message: 'the x-github-event header is required' },
      ]);
    }
    const withId = (delivery: ParsedDelivery): ParsedDelivery => (deliveryId ? { ...delivery, deliveryId } : delivery);
    switch (event) {
      case 'deployment_status':
        return withId({ events: [deploymentEvent(body)] });
      case 'push':
        return withId({ events: [pushEvent(body)] });
      case 'deployment':
        return withId(deploymentCreated(body));
      case 'workflow_run':
        return withId(workflowRunEvent(body));
      case 'release':
        return withId(releaseEvent(body));
      case 'pull_request':
        return withId(pullRequestEvent(body));
      case 'ping':
        return withId({ events: [], ignored: 'ping' });
      default:
        return withId({ events: [], ignored: `event type ${event} is not used` });
    }
  },
};
