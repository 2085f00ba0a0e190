/**
 * Real-format webhook payloads for the scenario suite, each built from the recorded fixtures in
 * test/fixtures/webhooks (Alertmanager v4, Datadog's documented template, Sentry's issue-alert
 * webhook, GitHub deployment_status and push) with the scenario's values put in.
 */
import { randomUUID } from 'node:crypto';
import { fixture } from '../helpers/webhooks.js';

const T0 = Date.now();
/** An ISO timestamp `minutes` from the start of the run (negative: in the past). */
export const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();
const epochMs = (minutes: number) => T0 + minutes * 60_000;

const clone = <T>(name: string): T => JSON.parse(fixture(name)) as T;

export interface PromAlert {
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  startsAt: number;
  endsAt?: number;
  status?: 'firing' | 'resolved';
  fingerprint?: string;
  expr?: string;
}

/** An Alertmanager `webhook_configs` notification (version 4). */
export function alertmanager(alerts: PromAlert[]): object {
  const body = clone<Record<string, any>>('alertmanager-firing.json');
  const status = alerts.every((a) => a.status === 'resolved') ? 'resolved' : 'firing';
  body.status = status;
  body.alerts = alerts.map((a) => ({
    status: a.status ?? 'firing',
    labels: a.labels,
    annotations: a.annotations ?? {},
    startsAt: at(a.startsAt),
    endsAt: a.status === 'resolved' ? at(a.endsAt ?? a.startsAt) : '0001-01-01T00:00:00Z',
    generatorURL: `http://prometheus.example.com:9090/graph?g0.expr=${encodeURIComponent(a.expr ?? `ALERTS{alertname="${a.labels.alertname}"}`)}&g0.tab=1`,
    ...(a.fingerprint ? { fingerprint: a.fingerprint } : {}),
  }));
  const first = alerts[0]!.labels;
  body.groupLabels = { service: first.service ?? '' };
  body.commonLabels = { service: first.service ?? '' };
  body.groupKey = `{}/{service="${first.service ?? ''}"}:{alertname="${first.alertname}"}`;
  return body;
}

/** A Datadog webhook with the documented payload template filled in. */
export function datadog(args: {
  title: string;
  body: string;
  service: string;
  minutes: number;
  priority?: string;
  transition?: string;
  metric?: string;
  query?: string;
  status?: string;
  tags?: string;
}): object {
  const payload = clone<Record<string, any>>('datadog-triggered.json');
  const transition = args.transition ?? 'Triggered';
  const monitorId = String(10_000_000 + Math.floor(Math.random() * 9_000_000));
  payload.id = String(BigInt(epochMs(args.minutes)) * 1000n);
  payload.title = `[${args.priority ?? 'P2'}] [${transition} on {service:${args.service},env:production}] ${args.title}`;
  payload.alert_title = `[${transition} on {service:${args.service},env:production}] ${args.title}`;
  payload.body = `%%%\n${args.body}\n\n[[Monitor Status](https://app.datadoghq.com/monitors/${monitorId})]\n%%%`;
  payload.date = String(epochMs(args.minutes));
  payload.last_updated = String(epochMs(args.minutes));
  payload.alert_id = monitorId;
  payload.alert_status =
    args.status ?? `${args.metric ?? 'monitor'} over env:production,service:${args.service} crossed its threshold`;
  payload.alert_transition = transition;
  payload.alert_priority = args.priority ?? 'P2';
  payload.aggreg_key = randomUUID().replace(/-/g, '');
  payload.alert_metric = args.metric ?? '';
  payload.alert_query = args.query ?? '';
  payload.alert_scope = `env:production,service:${args.service}`;
  payload.tags = args.tags ?? `env:production,monitor,service:${args.service}`;
  payload.link = `https://app.datadoghq.com/event/event?id=${payload.id}`;
  return payload;
}

/** A Sentry integration-platform issue alert (`event_alert`, action triggered). */
export function sentry(args: {
  project: string;
  type: string;
  value: string;
  minutes: number;
  culprit?: string;
  level?: string;
  release?: string;
  frames?: Array<{ filename: string; lineno: number; function: string }>;
  rule?: string;
}): object {
  const payload = clone<Record<string, any>>('sentry-event-alert.json');
  const event = payload.data.event;
  const eventId = randomUUID().replace(/-/g, '');
  const issueId = String(4_500_000_000 + Math.floor(Math.random() * 99_999_999));
  event.event_id = eventId;
  event.issue_id = issueId;
  event.issue_url = `https://sentry.io/api/0/issues/${issueId}/`;
  event.web_url = `https://sentry.io/organizations/example-shop/issues/${issueId}/events/${eventId}/`;
  event.url = `https://sentry.io/api/0/projects/example-shop/${args.project}/events/${eventId}/`;
  event.title = `${args.type}: ${args.value}`.slice(0, 200);
  event.culprit = args.culprit ?? event.culprit;
  event.level = args.level ?? 'error';
  event.datetime = at(args.minutes);
  event.timestamp = epochMs(args.minutes) / 1000;
  event.release = args.release ?? `${args.project}@2024.05.14-1`;
  event.metadata = {
    type: args.type,
    value: args.value,
    filename: args.frames?.[0]?.filename,
    function: args.frames?.[0]?.function,
  };
  event.exception.values[0].type = args.type;
  event.exception.values[0].value = args.value;
  event.exception.values[0].stacktrace.frames = (
    args.frames ?? [{ filename: 'app/main.py', lineno: 10, function: 'handler' }]
  ).map((f) => ({
    abs_path: `/app/${f.filename}`,
    filename: f.filename,
    function: f.function,
    lineno: f.lineno,
    in_app: true,
    module: f.filename.replace(/\.py$/, '').replace(/\//g, '.'),
  }));
  event.tags = [
    ['environment', 'production'],
    ['level', event.level],
    ['release', event.release],
    ['server_name', `${args.project}-7d9f8b6c5-x2k4p`],
  ];
  payload.data.triggered_rule = args.rule ?? `${args.project}: new unhandled errors in production`;
  return payload;
}

/** A GitHub `deployment_status` delivery. */
export function githubDeployment(args: {
  repo: string;
  id: number;
  sha: string;
  minutes: number;
  state?: string;
  environment?: string;
  ref?: string;
  description?: string;
}): { body: object; headers: Record<string, string> } {
  const payload = clone<Record<string, any>>('github-deployment-status.json');
  const full = `example-shop/${args.repo}`;
  payload.deployment.id = args.id;
  payload.deployment.sha = args.sha;
  payload.deployment.ref = args.ref ?? 'main';
  payload.deployment.environment = args.environment ?? 'production';
  payload.deployment.url = `https://api.github.com/repos/${full}/deployments/${args.id}`;
  payload.deployment.created_at = at(args.minutes - 3);
  payload.deployment.updated_at = at(args.minutes);
  payload.deployment_status.id = args.id * 10 + 1;
  payload.deployment_status.state = args.state ?? 'success';
  payload.deployment_status.environment = args.environment ?? 'production';
  payload.deployment_status.description =
    args.description ?? `Deployed ${args.repo}@${args.sha.slice(0, 7)} to ${args.environment ?? 'production'}`;
  payload.deployment_status.created_at = at(args.minutes);
  payload.deployment_status.updated_at = at(args.minutes);
  payload.deployment_status.target_url = `https://github.com/${full}/actions/runs/${args.id}`;
  payload.repository.name = args.repo;
  payload.repository.full_name = full;
  payload.repository.html_url = `https://github.com/${full}`;
  return { body: payload, headers: { 'x-github-event': 'deployment_status', 'x-github-delivery': randomUUID() } };
}

/** A GitHub `push` delivery; the last commit is the head. */
export function githubPush(args: {
  repo: string;
  minutes: number;
  commits: Array<{ id: string; message: string; modified?: string[]; added?: string[] }>;
  ref?: string;
}): { body: object; headers: Record<string, string> } {
  const payload = clone<Record<string, any>>('github-push.json');
  const full = `example-shop/${args.repo}`;
  const template = payload.commits[0];
  const commits = args.commits.map((c, i) => ({
    ...template,
    id: c.id,
    tree_id: c.id.split('').reverse().join(''),
    message: c.message,
    timestamp: at(args.minutes - (args.commits.length - i)),
    url: `https://github.com/${full}/commit/${c.id}`,
    added: c.added ?? [],
    removed: [],
    modified: c.modified ?? [],
  }));
  payload.ref = args.ref ?? 'refs/heads/main';
  payload.before = 'c7d2a9e4f1b6c3d8e5a2f9b0c7d4e1a8f5b2c9d6';
  payload.after = commits[commits.length - 1]!.id;
  payload.commits = commits;
  payload.head_commit = commits[commits.length - 1];
  payload.compare = `https://github.com/${full}/compare/c7d2a9e4f1b6...${payload.after.slice(0, 12)}`;
  payload.repository.name = args.repo;
  payload.repository.full_name = full;
  payload.repository.html_url = `https://github.com/${full}`;
  payload.repository.pushed_at = Math.floor(epochMs(args.minutes) / 1000);
  return { body: payload, headers: { 'x-github-event': 'push', 'x-github-delivery': randomUUID() } };
}

/** A generic-webhook alert (our own documented format). */
export function generic(args: {
  name: string;
  service: string;
  minutes: number;
  severity?: string;
  summary?: string;
  description?: string;
  labels?: Record<string, string>;
}): object {
  const body = JSON.parse(fixture('generic-single.json')) as Record<string, unknown>;
  return {
    ...body,
    name: args.name,
    service: args.service,
    severity: args.severity ?? 'high',
    summary: args.summary ?? args.name,
    description: args.description ?? '',
    labels: { env: 'production', ...args.labels },
    fingerprint: `${args.service}-${args.name}-${randomUUID()}`,
    startsAt: at(args.minutes),
  };
}
