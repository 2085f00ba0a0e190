/**
 * Real-format webhook deliveries for storm scenarios, shaped as each tool sends them (fields,
 * group keys, titles, ids), from a few facts per alert. Ids and fingerprints are derived from the
 * alert's identity, so a tool's repeat of an alert carries the same ones, as the tool's would.
 */
import { createHash } from 'node:crypto';
import type { StormDelivery, Truth } from './types.js';

type Time = (at: number) => Date;

const hex = (text: string, length: number) => createHash('sha256').update(text).digest('hex').slice(0, length);
const digits = (text: string, length: number) =>
  BigInt(`0x${hex(text, 24)}`)
    .toString()
    .padStart(length, '7')
    .slice(0, length);
const iso = (date: Date) => date.toISOString();
const labelSet = (labels: Record<string, string>) =>
  `{${Object.keys(labels)
    .sort()
    .map((key) => `${key}="${labels[key]}"`)
    .join(', ')}}`;

/** One Prometheus-rule alert as Alertmanager (or Grafana) holds it. */
export interface RuleAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Scenario second it started firing (Alertmanager repeats it in every notification). */
  startsAt: number;
  /** Scenario second it ended, for a resolved alert. */
  endsAt?: number;
  truth: Truth;
}

export function ruleAlert(
  name: string,
  service: string,
  severity: string,
  summary: string,
  startsAt: number,
  truth: Truth,
  extra: { labels?: Record<string, string>; description?: string; endsAt?: number } = {},
): RuleAlert {
  return {
    labels: { alertname: name, service, severity, ...extra.labels },
    annotations: { summary, ...(extra.description ? { description: extra.description } : {}) },
    startsAt,
    ...(extra.endsAt !== undefined ? { endsAt: extra.endsAt } : {}),
    truth,
  };
}

function common(records: Array<Record<string, string>>): Record<string, string> {
  const [first, ...rest] = records;
  if (!first) return {};
  return Object.fromEntries(Object.entries(first).filter(([key, value]) => rest.every((r) => r[key] === value)));
}

function groupLabelsOf(alerts: RuleAlert[], groupBy: string[]): Record<string, string> {
  const groupLabels: Record<string, string> = {};
  for (const key of groupBy) {
    const values = new Set(alerts.map((a) => a.labels[key] ?? ''));
    if (values.size !== 1) throw new Error(`alerts of one group differ in ${key}: ${[...values].join(', ')}`);
    const value = [...values][0]!;
    if (value !== '') groupLabels[key] = value;
  }
  return groupLabels;
}

function ruleAlertBody(time: Time, alert: RuleAlert, generatorURL: string) {
  const resolved = alert.endsAt !== undefined;
  return {
    status: resolved ? 'resolved' : 'firing',
    labels: alert.labels,
    annotations: alert.annotations,
    startsAt: iso(time(alert.startsAt)),
    endsAt: resolved ? iso(time(alert.endsAt!)) : '0001-01-01T00:00:00Z',
    generatorURL,
    fingerprint: hex(labelSet(alert.labels), 16),
  };
}

/**
 * An Alertmanager `webhook_configs` notification of one group: `route` is the route's matchers as
 * Alertmanager writes them before the group labels (`{}` for the root route).
 */
export function alertmanager(
  time: Time,
  at: number,
  alerts: RuleAlert[],
  options: { groupBy: string[]; route?: string; receiver?: string } = { groupBy: ['alertname', 'service'] },
): StormDelivery {
  const groupLabels = groupLabelsOf(alerts, options.groupBy);
  const body = {
    receiver: options.receiver ?? 'incident-investigation',
    status: alerts.some((a) => a.endsAt === undefined) ? 'firing' : 'resolved',
    alerts: alerts.map((alert) =>
      ruleAlertBody(
        time,
        alert,
        `http://prometheus-k8s-0:9090/graph?g0.expr=${encodeURIComponent(`ALERTS{alertname="${alert.labels.alertname}"}`)}&g0.tab=1`,
      ),
    ),
    groupLabels,
    commonLabels: common(alerts.map((a) => a.labels)),
    commonAnnotations: common(alerts.map((a) => a.annotations)),
    externalURL: 'http://alertmanager-main-0:9093',
    version: '4',
    groupKey: `${options.route ?? '{}'}:${labelSet(groupLabels)}`,
    truncatedAlerts: 0,
  };
  return { at, provider: 'alertmanager', body, truth: alerts.map((a) => a.truth) };
}

/** A Grafana unified-alerting webhook notification of one group (default policy: folder and rule). */
export function grafana(
  time: Time,
  at: number,
  alerts: RuleAlert[],
  options: { folder: string; groupBy?: string[]; value?: number } = { folder: 'Services' },
): StormDelivery {
  const withFolder: RuleAlert[] = alerts.map((a) => ({
    ...a,
    labels: { ...a.labels, grafana_folder: options.folder },
  }));
  const groupBy = options.groupBy ?? ['grafana_folder', 'alertname'];
  const groupLabels = groupLabelsOf(withFolder, groupBy);
  const commonLabels = common(withFolder.map((a) => a.labels));
  const rest = Object.keys(commonLabels)
    .filter((key) => !(key in groupLabels))
    .sort()
    .map((key) => commonLabels[key]);
  const firing = withFolder.filter((a) => a.endsAt === undefined).length;
  const value = options.value ?? 0.087;
  const body = {
    receiver: 'incident-investigation',
    status: firing > 0 ? 'firing' : 'resolved',
    orgId: 1,
    alerts: withFolder.map((alert) => {
      const uid = hex(`rule:${alert.labels.alertname}`, 14);
      const matchers = Object.entries(alert.labels)
        .map(([k, v]) => `matcher=${encodeURIComponent(`${k}=${v}`)}`)
        .join('&');
      return {
        ...ruleAlertBody(time, alert, `https://grafana.example.com/alerting/grafana/${uid}/view?orgId=1`),
        silenceURL: `https://grafana.example.com/alerting/silence/new?alertmanager=grafana&${matchers}&orgId=1`,
        dashboardURL: `https://grafana.example.com/d/${hex(alert.labels.service ?? '', 9)}?orgId=1`,
        panelURL: `https://grafana.example.com/d/${hex(alert.labels.service ?? '', 9)}?orgId=1&viewPanel=2`,
        values: { B: value, C: 1 },
        valueString: `[ var='B' labels={service=${alert.labels.service}} value=${value} ], [ var='C' labels={service=${alert.labels.service}} value=1 ]`,
      };
    }),
    groupLabels,
    commonLabels,
    commonAnnotations: common(withFolder.map((a) => a.annotations)),
    externalURL: 'https://grafana.example.com/',
    version: '1',
    groupKey: `{}/{__grafana_autogenerated__="true"}/{__grafana_receiver__="incident-investigation"}:${labelSet(groupLabels)}`,
    truncatedAlerts: 0,
    title: `[${firing > 0 ? `FIRING:${firing}` : 'RESOLVED'}] ${Object.values(groupLabels).join(' ')} ${rest.length > 0 ? `(${rest.join(' ')})` : ''}`,
    state: firing > 0 ? 'alerting' : 'ok',
    message: `**${firing > 0 ? 'Firing' : 'Resolved'}**\n\n${withFolder
      .map(
        (a) =>
          `Value: B=${value}, C=1\nLabels:\n${Object.entries(a.labels)
            .map(([k, v]) => ` - ${k} = ${v}`)
            .join('\n')}\n`,
      )
      .join('\n')}`,
  };
  return { at, provider: 'grafana', body, truth: withFolder.map((a) => a.truth) };
}

export interface MonitorEvent {
  monitorId: number;
  /** The monitor's name (its title without Datadog's brackets). */
  name: string;
  service: string;
  /** `key:value` tags beyond service and env. */
  tags?: string[];
  /** The multi-alert group, e.g. `service:checkout,env:production` (default: service and env). */
  scope?: string;
  priority?: 'P1' | 'P2' | 'P3' | 'P4' | 'P5';
  transition?: 'Triggered' | 'Re-Triggered' | 'Recovered' | 'Warn';
  metric: string;
  status: string;
  message: string;
  truth: Truth;
}

/** A Datadog monitor notification through the webhook template of docs/integrations/datadog.md. */
export function datadog(time: Time, at: number, event: MonitorEvent): StormDelivery {
  const scope = event.scope ?? `env:production,service:${event.service}`;
  const transition = event.transition ?? 'Triggered';
  const id = digits(`${event.monitorId}:${scope}:${at}`, 19);
  const stamp = String(time(at).getTime());
  const bracket = transition === 'Recovered' ? 'Recovered' : transition === 'Warn' ? 'Warn' : 'Triggered';
  const alertTitle = `[${bracket} on {${scope}}] ${event.name}`;
  const body = {
    id,
    title: event.priority ? `[${event.priority}] ${alertTitle}` : alertTitle,
    body: `%%%\n${event.message} @webhook-incident-investigation\n\n- - -\n\n[[Monitor Status](https://app.datadoghq.com/monitors/${event.monitorId}?event_id=${id})] · [[Edit Monitor](https://app.datadoghq.com/monitors#${event.monitorId}/edit)]\n%%%`,
    event_type: 'query_alert_monitor',
    date: stamp,
    last_updated: stamp,
    alert_id: String(event.monitorId),
    alert_title: alertTitle,
    alert_status: event.status,
    alert_transition: transition,
    alert_priority: event.priority ?? '',
    aggreg_key: hex(`${event.monitorId}:${scope}`, 32),
    alert_metric: event.metric,
    alert_scope: scope,
    hostname: '',
    tags: ['env:production', 'monitor', `service:${event.service}`, ...(event.tags ?? [])].join(','),
    link: `https://app.datadoghq.com/event/event?id=${id}`,
    org: { id: '321813', name: 'Example Shop' },
  };
  return { at, provider: 'datadog', body, truth: [event.truth] };
}

export interface SentryIssue {
  project: string;
  title: string;
  culprit: string;
  level?: 'fatal' | 'error' | 'warning';
  release?: string;
  rule?: string;
  /** Extra `[key, value]` tags. */
  tags?: Array<[string, string]>;
  truth: Truth;
}

/** A Sentry issue alert (integration platform, `event_alert`) for one event of an issue. */
export function sentry(time: Time, at: number, issue: SentryIssue): StormDelivery {
  const issueId = digits(`${issue.project}:${issue.title}:${issue.culprit}`, 10);
  const eventId = hex(`${issueId}:${at}`, 32);
  const date = time(at);
  const tags: Array<[string, string]> = [
    ['environment', 'production'],
    ['level', issue.level ?? 'error'],
    ...(issue.release ? ([['release', issue.release]] as Array<[string, string]>) : []),
    ['server_name', `${issue.project}-${hex(issue.project, 9)}-${hex(`${issue.project}${at}`, 5)}`],
    ...(issue.tags ?? []),
  ];
  const body = {
    action: 'triggered',
    actor: { id: 'sentry', name: 'Sentry', type: 'application' },
    data: {
      event: {
        culprit: issue.culprit,
        datetime: date.toISOString(),
        environment: 'production',
        event_id: eventId,
        issue_id: issueId,
        issue_url: `https://sentry.io/api/0/issues/${issueId}/`,
        level: issue.level ?? 'error',
        logger: '',
        message: '',
        metadata: { title: issue.title },
        platform: 'python',
        project: Number(digits(issue.project, 15)),
        ...(issue.release ? { release: issue.release } : {}),
        tags,
        timestamp: date.getTime() / 1000,
        title: issue.title,
        type: 'error',
        url: `https://sentry.io/api/0/projects/example-shop/${issue.project}/events/${eventId}/`,
        web_url: `https://example-shop.sentry.io/issues/${issueId}/events/${eventId}/`,
      },
      triggered_rule: issue.rule ?? `${issue.project}: new issues in production`,
    },
    installation: { uuid: '7a485448-a9e2-4c85-8a3c-4f44175783c9' },
  };
  return {
    at,
    provider: 'sentry',
    body,
    headers: {
      'sentry-hook-resource': 'event_alert',
      'sentry-hook-timestamp': String(Math.floor(date.getTime() / 1000)),
    },
    truth: [issue.truth],
  };
}

export interface GenericAlert {
  name: string;
  service: string;
  severity: string;
  summary: string;
  labels?: Record<string, string>;
  status?: 'firing' | 'resolved';
  startsAt: number;
  truth: Truth;
}

/** A generic webhook batch (a synthetic checker, a cron monitor, a home-grown script). */
export function generic(time: Time, at: number, alerts: GenericAlert[], sender = 'synthetics'): StormDelivery {
  const body = {
    alerts: alerts.map((a) => ({
      name: a.name,
      status: a.status ?? 'firing',
      severity: a.severity,
      service: a.service,
      summary: a.summary,
      labels: { env: 'production', source: sender, ...a.labels },
      fingerprint: `${sender}:${a.service}:${a.name}`,
      startsAt: iso(time(a.startsAt)),
      ...(a.status === 'resolved' ? { endsAt: iso(time(at)) } : {}),
    })),
  };
  return {
    at,
    provider: 'generic',
    body,
    headers: { 'x-delivery-id': `${sender}-${hex(JSON.stringify(body), 20)}` },
    truth: alerts.map((a) => a.truth),
  };
}

/** kube-prometheus's Watchdog, as its heartbeat route re-sends it. */
export function watchdog(time: Time, at: number, since = -3600): StormDelivery {
  return alertmanager(
    time,
    at,
    [
      {
        labels: { alertname: 'Watchdog', prometheus: 'monitoring/k8s', severity: 'none' },
        annotations: {
          summary: 'An alert that should always be firing to certify that Alertmanager is working properly.',
          runbook_url: 'https://runbooks.prometheus-operator.dev/runbooks/general/watchdog',
        },
        startsAt: since,
        truth: 'test',
      },
    ],
    { groupBy: ['alertname'], route: '{}/{alertname="Watchdog"}' },
  );
}

/** Grafana's contact point test ("Test" button). */
export function grafanaTest(time: Time, at: number): StormDelivery {
  const stamp = Math.floor(time(at).getTime() / 1000);
  const body = {
    receiver: 'incident-investigation',
    status: 'firing',
    alerts: [
      {
        status: 'firing',
        labels: { alertname: 'TestAlert', instance: 'Grafana' },
        annotations: { summary: 'Notification test' },
        startsAt: iso(time(at)),
        endsAt: '0001-01-01T00:00:00Z',
        generatorURL: '',
        fingerprint: '57c6d9296de2ad39',
        silenceURL:
          'https://grafana.example.com/alerting/silence/new?alertmanager=grafana&matcher=alertname%3DTestAlert&matcher=instance%3DGrafana',
        dashboardURL: '',
        panelURL: '',
        values: null,
        valueString: "[ metric='foo' labels={instance=bar} value=10 ]",
      },
    ],
    groupLabels: { alertname: 'TestAlert', instance: 'Grafana' },
    commonLabels: { alertname: 'TestAlert', instance: 'Grafana' },
    commonAnnotations: { summary: 'Notification test' },
    externalURL: 'https://grafana.example.com/',
    version: '1',
    groupKey: `incident-investigation-57c6d9296de2ad39-${stamp}`,
    truncatedAlerts: 0,
    orgId: 1,
    title: '[FIRING:1] TestAlert Grafana ',
    state: 'alerting',
    message:
      '**Firing**\n\nValue: [no value]\nLabels:\n - alertname = TestAlert\n - instance = Grafana\nAnnotations:\n - summary = Notification test\n',
  };
  return { at, provider: 'grafana', body, truth: ['test'] };
}

/** A Datadog monitor's "Test Notifications" run. */
export function datadogTest(time: Time, at: number, event: Omit<MonitorEvent, 'truth'>): StormDelivery {
  const delivery = datadog(time, at, { ...event, truth: 'test' });
  const body = delivery.body as Record<string, string>;
  body.alert_title = body.alert_title!.replace('] ', '] [TEST] ');
  body.title = body.title!.replace(event.name, `[TEST] ${event.name}`);
  body.body = body.body!.replace(' @webhook', '\n\nTest notification triggered by sre.oncall@example.com. @webhook');
  return delivery;
}
