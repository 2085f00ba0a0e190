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
 * The format is told by the `sentry-hook-resource` header when present (other integration-platform
 * resources, e.g. `installation` or `metric_alert`, are acknowledged and ignored), else by shape:
 * a body with `action` / `data` is (a), anything else (b).
 *
 * Mapping: issue alerts are always firing (Sentry sends nothing when an issue resolves through this
 * hook). alertName = the event title; service = the project slug (format (a) carries only the
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
import { type NormalizedAlert, type ParsedDelivery, type WebhookProvider } from '../types.js';

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
    if (!legacyTitle(payload)) ctx.addIssue({ code: 'custom', path: ['event', 'title'], message: 'the event title is required (event.title, event.metadata.title or message)' });
  });

/** Sentry 8 and 9 send the title only in `event.metadata.title` (and the message at the top). */
function legacyTitle(payload: {
  message?: string | null | undefined;
  event: { title?: string | null | undefined; metadata?: { title?: string | null | undefined } | null | undefined };
}): string | undefined {
  return nonEmpty(payload.event.title?.trim()) ?? nonEmpty(payload.event.metadata?.title?.trim()) ?? nonEmpty(payload.message?.trim());
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
  raw: unknown;
}

function toAlert(input: SentryAlertInput): NormalizedAlert {
  const alertName = input.title;
  const service = input.projectSlug ?? nonEmpty(input.labels.service) ?? null;
  const level = input.level;
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
    raw: body,
  });
  return { alert, deliveryId: eventId && `event:${eventId}` };
}

export const sentryProvider: WebhookProvider = {
  name: 'sentry',
  parse(body, header): ParsedDelivery {
    const resource = nonEmpty(header('sentry-hook-resource'));
    if (resource !== undefined && resource !== 'event_alert') {
      return { events: [], ignored: `sentry resource ${resource} is not used` };
    }
    const looksIntegrationPlatform =
      typeof body === 'object' && body !== null && ('data' in body || 'action' in body);
    const { alert, deliveryId } = resource === 'event_alert' || looksIntegrationPlatform ? parseEventAlert(body) : parseLegacy(body);
    return deliveryId ? { events: [alert], deliveryId } : { events: [alert] };
  },
};
