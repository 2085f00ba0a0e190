/**
 * Sentry issue alerts. Both formats are accepted:
 *
 * (a) Integration platform issue-alert webhook (`Sentry-Hook-Resource: event_alert`,
 *     `action: "triggered"`, the event under `data.event`, the rule in `data.triggered_rule`).
 *     https://docs.sentry.io/organization/integrations/integration-platform/webhooks/issue-alerts/
 * (b) The legacy Webhooks plugin (issue id in `id`, `project_slug`, `level`, `culprit`, `message`,
 *     `url`, `triggering_rules`, the event under `event`).
 *     Documented on Sentry's legacy "Webhook Plugin" docs page (getsentry/sentry-docs).
 *
 * Two more integration-platform resources are read:
 * (c) `issue` (an internal integration subscribed to issues): `action: "resolved"` is the recovery
 *     of the issue's alert (same fingerprint); `created`, `assigned`, `archived`, `unresolved` are
 *     acknowledged and ignored, since the issue alert rules decide what opens an incident.
 * (d) `metric_alert` (a metric alert rule's action): `critical` and `warning` fire, `resolved`
 *     recovers; fingerprint `sentry:metric:<alert rule id>`.
 *
 * The format is told by the `sentry-hook-resource` header when present (other resources, e.g.
 * `installation` or `comment`, are acknowledged and ignored), else by shape: `data.metric_alert`
 * is (d), `data.issue` (c), any other body with `action` / `data` (a), anything else (b).
 *
 * Mapping: issue alerts are always firing (their resolution comes as (c)). alertName = the event title; service = the project slug (format (a) carries only the
 * numeric project id, so the slug is read from the event's API URL), else the `service` tag;
 * severity from the event level (fatal → critical, error → high, warning → medium, info/debug → low;
 * none → high, Sentry's default level is error); labels = the event tags; fingerprint =
 * `sentry:<issue id>`, else a hash of title and service only (tags such as browser or user change
 * from event to event). Delivery id = `event:<event id>` (and the rule, for format (a)), not the
 * `Request-ID` header: Sentry makes a new one for every send, retries included (its webhook
 * tasks retry three times, five minutes apart, after a timeout of one second), so a retry would
 * be stored again; the event id is the same in every retry of a notification. Without an event
 * id, the body hash (10 minutes) applies. Sentry 8 and 9's legacy plugin sends no `event.title`:
 * the title is then `event.metadata.title`, else the top-level `message`.
 *
 * Origins: the event's release (`deploy:<release>`, from the `release` tag or `event.release`; a
 * release is unique within a Sentry organisation) and any commit or deploy a tag names. Sentry's
 * "Send Test Notification" of an alert rule and the legacy plugin's "Test Plugin" both send a
 * sample event, tagged `sample_event: yes`: marked as a test, as is an event tagged `test: true`.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import {
  hashFingerprint,
  makeDescription,
  makeTitle,
  mapSeverity,
  nonEmpty,
  parseTime,
  parseWith,
  toolFingerprint,
} from '../normalize.js';
import { type HeaderReader, type NormalizedAlert, type ParsedDelivery, type WebhookProvider } from '../types.js';
import { attribute } from '../attribution.js';
import { deployOrigins, marked, testLabel } from './markers.js';

const id = z.union([z.string(), z.number()]).transform((value) => String(value));
const tagValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const tagsSchema = z.array(
  z.union([z.tuple([z.string(), tagValue]), z.looseObject({ key: z.string(), value: tagValue })]),
);
const title = z.string({ error: 'the event title is required' }).trim().min(1, 'the event title must not be empty');
const time = z.union([z.string(), z.number()]).nullish();

const eventAlertSchema = z.looseObject({
  action: z.literal('triggered', { error: 'action must be "triggered" for an issue alert' }),
  data: z.looseObject({
    event: z.looseObject({
      event_id: z.string().nullish(),
      title,
      level: z.string().nullish(),
      culprit: z.string().nullish(),
      message: z.string().nullish(),
      issue_id: id.nullish(),
      issue_url: z.string().nullish(),
      web_url: z.string().nullish(),
      url: z.string().nullish(),
      datetime: time,
      timestamp: time,
      tags: tagsSchema.nullish(),
      project: id.nullish(),
    }),
    triggered_rule: z.string().nullish(),
  }),
});

const legacySchema = z
  .looseObject({
    id,
    project: z.string().nullish(),
    project_name: z.string().nullish(),
    project_slug: z.string().nullish(),
    culprit: z.string().nullish(),
    level: z.string().nullish(),
    message: z.string().nullish(),
    url: z.string().nullish(),
    triggering_rules: z.array(z.string()).nullish(),
    event: z.looseObject({
      event_id: z.string().nullish(),
      title: z.string().nullish(),
      metadata: z.looseObject({ title: z.string().nullish() }).nullish(),
      level: z.string().nullish(),
      culprit: z.string().nullish(),
      tags: tagsSchema.nullish(),
      timestamp: time,
      datetime: time,
    }),
  })
  .superRefine((payload, ctx) => {
    if (!legacyTitle(payload))
      ctx.addIssue({
        code: 'custom',
        path: ['event', 'title'],
        message: 'the event title is required (event.title, event.metadata.title or message)',
      });
  });

/** Sentry 8 and 9 send the title only in `event.metadata.title` (and the message at the top). */
function legacyTitle(payload: {
  message?: string | null | undefined;
  event: { title?: string | null | undefined; metadata?: { title?: string | null | undefined } | null | undefined };
}): string | undefined {
  return (
    nonEmpty(payload.event.title?.trim()) ??
    nonEmpty(payload.event.metadata?.title?.trim()) ??
    nonEmpty(payload.message?.trim())
  );
}

function tagsToLabels(tags: z.output<typeof tagsSchema> | null | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const tag of tags ?? []) {
    const [key, value] = Array.isArray(tag) ? tag : [tag.key, tag.value];
    if (key.trim() === '') continue;
    labels[key] = value === null ? '' : String(value);
  }
  return labels;
}

/** `https://sentry.io/api/0/projects/<org>/<project>/events/<id>/` → `<project>`. */
function projectSlugFromUrl(url: string | null | undefined): string | undefined {
  const match = url ? /\/projects\/[^/]+\/([^/]+)\//.exec(url) : null;
  return match?.[1] ? decodeURIComponent(match[1]) : undefined;
}

interface SentryAlertInput {
  title: string;
  issueId: string | undefined;
  projectSlug: string | undefined;
  level: string | undefined;
  culprit: string | undefined;
  message: string | undefined;
  rules: string[];
  link: string | undefined;
  time: unknown;
  labels: Record<string, string>;
  /** The event's release when the payload carries one outside its tags. */
  release?: string | undefined;
  raw: unknown;
}

/** A string field of an object the schema does not type (kept by its loose parse). */
function looseString(value: object, key: string): string | undefined {
  const field = (value as Record<string, unknown>)[key];
  return typeof field === 'string' ? field : undefined;
}

function toAlert(input: SentryAlertInput): NormalizedAlert {
  const alertName = input.title;
  const { service, attribution } = attribute({
    tool: 'sentry',
    projects: input.projectSlug ? [input.projectSlug] : [],
    tags: input.labels,
  });
  const level = input.level;
  const release = nonEmpty(input.labels.release) ?? nonEmpty(input.labels['sentry:release']) ?? nonEmpty(input.release);
  const test = input.labels.sample_event === 'yes' || testLabel(input.labels);
  return marked(
    { ...toAlertFields(input, alertName, service, level), attribution },
    deployOrigins(service, [input.labels], { release }),
    test,
  );
}

function toAlertFields(
  input: SentryAlertInput,
  alertName: string,
  service: string | null,
  level: string | undefined,
): NormalizedAlert {
  return {
    kind: 'alert',
    status: 'firing',
    fingerprint: input.issueId
      ? toolFingerprint('sentry', input.issueId)
      : hashFingerprint('sentry', alertName, service, {}),
    alertName,
    service,
    severity: mapSeverity(level, 'high'),
    title: makeTitle(alertName, input.culprit),
    description: makeDescription(
      [
        input.message !== alertName ? input.message : undefined,
        input.culprit && `Culprit: ${input.culprit}`,
        level && `Level: ${level}`,
        input.rules.length > 0 ? `Alert rule: ${input.rules.join(', ')}` : undefined,
        input.link && `Link: ${input.link}`,
      ],
      input.labels,
    ),
    labels: input.labels,
    occurredAt: parseTime(input.time, new Date()),
    raw: input.raw,
  };
}

function parseEventAlert(body: unknown): { alert: NormalizedAlert; deliveryId: string | undefined } {
  const payload = parseWith(eventAlertSchema, body, 'sentry');
  const event = payload.data.event;
  const rule = nonEmpty(payload.data.triggered_rule);
  const eventId = nonEmpty(event.event_id);
  const alert = toAlert({
    title: event.title,
    issueId: nonEmpty(event.issue_id),
    projectSlug: projectSlugFromUrl(event.url),
    level: nonEmpty(event.level),
    culprit: nonEmpty(event.culprit),
    message: nonEmpty(event.message),
    rules: rule ? [rule] : [],
    link: nonEmpty(event.web_url) ?? nonEmpty(event.issue_url),
    time: event.datetime ?? event.timestamp,
    labels: tagsToLabels(event.tags),
    release: looseString(event, 'release'),
    raw: body,
  });
  return { alert, deliveryId: eventId && `event:${eventId}${rule ? `:${ruleKey(rule)}` : ''}` };
}

/** A rule's name in a delivery id (1–200 visible ASCII characters): a short hash of it. */
const ruleKey = (rule: string) => createHash('sha256').update(rule).digest('hex').slice(0, 16);

function parseLegacy(body: unknown): { alert: NormalizedAlert; deliveryId: string | undefined } {
  const payload = parseWith(legacySchema, body, 'sentry');
  const event = payload.event;
  const eventId = nonEmpty(event.event_id);
  const alert = toAlert({
    title: legacyTitle(payload)!,
    issueId: nonEmpty(payload.id),
    projectSlug: nonEmpty(payload.project_slug) ?? nonEmpty(payload.project),
    level: nonEmpty(event.level) ?? nonEmpty(payload.level),
    culprit: nonEmpty(payload.culprit) ?? nonEmpty(event.culprit),
    message: nonEmpty(payload.message),
    rules: (payload.triggering_rules ?? []).filter((rule) => rule.trim() !== ''),
    link: nonEmpty(payload.url),
    time: event.datetime ?? event.timestamp,
    labels: tagsToLabels(event.tags),
    release: looseString(event, 'release'),
    raw: body,
  });
  return { alert, deliveryId: eventId && `event:${eventId}` };
}

/** Lifecycle actions of the `issue` resource; only `resolved` is recorded (a recovery). */
const issueSchema = z.looseObject({
  action: z.string({ error: 'action is required' }),
  data: z.looseObject({
    issue: z.looseObject({
      id,
      title: z.string().nullish(),
      metadata: z.looseObject({ title: z.string().nullish() }).nullish(),
      culprit: z.string().nullish(),
      level: z.string().nullish(),
      web_url: z.string().nullish(),
      permalink: z.string().nullish(),
      project: z.looseObject({ slug: z.string().nullish() }).nullish(),
    }),
  }),
});

/**
 * An issue resolved in Sentry (integration-platform `issue` resource): the recovery of the
 * issue's alert (`sentry:<issue id>`, the fingerprint of its issue alerts). Sentry sends no
 * resolution time, so it is the hook's timestamp, else now. No delivery id: the body hash
 * (10 minutes) answers Sentry's retries.
 */
function parseIssue(body: unknown, header: HeaderReader): ParsedDelivery {
  const action = typeof body === 'object' && body !== null ? (body as { action?: unknown }).action : undefined;
  if (typeof action === 'string' && action !== 'resolved') {
    return { events: [], ignored: `sentry issue action ${action} is not used` };
  }
  const payload = parseWith(issueSchema, body, 'sentry');
  const issue = payload.data.issue;
  const alertName = nonEmpty(issue.title) ?? nonEmpty(issue.metadata?.title) ?? `Sentry issue ${issue.id}`;
  const resolved = toAlert({
    title: alertName,
    issueId: issue.id,
    projectSlug: nonEmpty(issue.project?.slug),
    level: nonEmpty(issue.level),
    culprit: nonEmpty(issue.culprit),
    message: 'Resolved in Sentry.',
    rules: [],
    link: nonEmpty(issue.web_url) ?? nonEmpty(issue.permalink),
    time: header('sentry-hook-timestamp'),
    labels: {},
    raw: body,
  });
  return { events: [{ ...resolved, status: 'resolved' }] };
}

const metricAlertSchema = z
  .looseObject({
    action: z.enum(['critical', 'warning', 'resolved'], {
      error: 'action must be "critical", "warning" or "resolved" for a metric alert',
    }),
    data: z.looseObject({
      description_title: z.string().nullish(),
      description_text: z.string().nullish(),
      web_url: z.string().nullish(),
      metric_alert: z.looseObject({
        id: id.nullish(),
        title: z.string().nullish(),
        date_started: time,
        date_detected: time,
        date_closed: time,
        alert_rule: z.looseObject({
          id,
          name: z.string().nullish(),
          projects: z.array(z.string()).nullish(),
          environment: z.string().nullish(),
          query: z.string().nullish(),
          aggregate: z.string().nullish(),
        }),
      }),
    }),
  })
  .superRefine((payload, ctx) => {
    if (!metricAlertName(payload.data)) {
      ctx.addIssue({
        code: 'custom',
        path: ['data', 'metric_alert', 'alert_rule', 'name'],
        message: 'the alert rule name is required (or the metric alert title)',
      });
    }
  });

function metricAlertName(data: {
  description_title?: string | null | undefined;
  metric_alert: { title?: string | null | undefined; alert_rule: { name?: string | null | undefined } };
}): string | undefined {
  return (
    nonEmpty(data.metric_alert.alert_rule.name) ?? nonEmpty(data.metric_alert.title) ?? nonEmpty(data.description_title)
  );
}

/**
 * A metric alert (integration-platform `metric_alert` resource): `critical` and `warning` fire,
 * `resolved` recovers. One fingerprint per alert rule (`sentry:metric:<rule id>`), so a rule that
 * breaches again while its incident is open attaches to it, as a repeated Alertmanager alert does.
 */
function parseMetricAlert(body: unknown): ParsedDelivery {
  const payload = parseWith(metricAlertSchema, body, 'sentry');
  const { data } = payload;
  const incident = data.metric_alert;
  const rule = incident.alert_rule;
  const alertName = metricAlertName(data)!;
  const labels: Record<string, string> = {};
  if (nonEmpty(rule.environment)) labels.environment = rule.environment!.trim();
  const projects = (rule.projects ?? []).map((project) => project.trim()).filter((project) => project !== '');
  if (projects.length > 0) labels.projects = projects.join(',');
  const firing = payload.action !== 'resolved';
  const alert: NormalizedAlert = {
    kind: 'alert',
    status: firing ? 'firing' : 'resolved',
    fingerprint: toolFingerprint('sentry', `metric:${rule.id}`),
    alertName,
    ...attribute({ tool: 'sentry', projects, tags: {} }),
    severity: payload.action === 'critical' ? 'critical' : 'medium',
    title: makeTitle(alertName, nonEmpty(data.description_title)),
    description: makeDescription(
      [
        nonEmpty(data.description_text),
        `Metric alert: ${payload.action}`,
        nonEmpty(rule.aggregate) &&
          `Metric: ${rule.aggregate!.trim()}${nonEmpty(rule.query) ? ` where ${rule.query!.trim()}` : ''}`,
        nonEmpty(data.web_url) && `Link: ${data.web_url!.trim()}`,
      ],
      labels,
    ),
    labels,
    occurredAt: parseTime(
      firing ? (incident.date_detected ?? incident.date_started) : incident.date_closed,
      new Date(),
    ),
    raw: body,
  };
  return { events: [alert] };
}

/** The integration-platform resources this provider reads; others are acknowledged and ignored. */
const resources = ['event_alert', 'issue', 'metric_alert'] as const;
type Resource = (typeof resources)[number];

/** A body's resource when Sentry's header is absent: told by what `data` holds. */
function resourceByShape(body: unknown): Resource | 'legacy' {
  if (typeof body !== 'object' || body === null || !('data' in body || 'action' in body)) return 'legacy';
  const data = (body as { data?: unknown }).data;
  if (typeof data === 'object' && data !== null && !('event' in data)) {
    if ('metric_alert' in data) return 'metric_alert';
    if ('issue' in data) return 'issue';
  }
  return 'event_alert';
}

export const sentryProvider: WebhookProvider = {
  name: 'sentry',
  parse(body, header): ParsedDelivery {
    const named = nonEmpty(header('sentry-hook-resource'));
    if (named !== undefined && !(resources as readonly string[]).includes(named)) {
      return { events: [], ignored: `sentry resource ${named} is not used` };
    }
    const resource = (named as Resource | undefined) ?? resourceByShape(body);
    if (resource === 'issue') return parseIssue(body, header);
    if (resource === 'metric_alert') return parseMetricAlert(body);
    const { alert, deliveryId } = resource === 'event_alert' ? parseEventAlert(body) : parseLegacy(body);
    return deliveryId ? { events: [alert], deliveryId } : { events: [alert] };
  },
};
