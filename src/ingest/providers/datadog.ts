/**
 * Datadog Webhooks integration. https://docs.datadoghq.com/integrations/webhooks/
 *
 * Datadog's webhook body is whatever payload template the webhook is configured with; Datadog
 * fills in `$VARIABLES`. Configure the webhook (Integrations → Webhooks → New, "Payload") with
 * exactly this template:
 *
 * ```json
 * {
 *   "id": "$ID",
 *   "title": "$EVENT_TITLE",
 *   "body": "$EVENT_MSG",
 *   "event_type": "$EVENT_TYPE",
 *   "date": "$DATE",
 *   "last_updated": "$LAST_UPDATED",
 *   "alert_id": "$ALERT_ID",
 *   "alert_title": "$ALERT_TITLE",
 *   "alert_status": "$ALERT_STATUS",
 *   "alert_transition": "$ALERT_TRANSITION",
 *   "alert_priority": "$ALERT_PRIORITY",
 *   "aggreg_key": "$AGGREG_KEY",
 *   "alert_metric": "$ALERT_METRIC",
 *   "alert_scope": "$ALERT_SCOPE",
 *   "hostname": "$HOSTNAME",
 *   "tags": "$TAGS",
 *   "link": "$LINK",
 *   "org": { "id": "$ORG_ID", "name": "$ORG_NAME" }
 * }
 * ```
 *
 * Mapping:
 * - `title` or `alert_title` is required. The alert name is `alert_title` (else `title`) without
 *   Datadog's leading `[Triggered on {…}]` / `[Recovered]` / `[P1]` brackets, so it is the same
 *   for every notification of a monitor.
 * - `alert_transition` `Recovered` (any case) → resolved; everything else (Triggered, Re-Triggered,
 *   Warn, Re-Warn, No Data, Re-No Data, Renotify) → firing. When `alert_transition` is empty, a
 *   `[Recovered …]` title prefix means resolved.
 * - `tags` (`a:b, c:d`; a tag without `:` becomes a label with an empty value) → labels; the service
 *   is the scope's (title `[Triggered on {service:…}]`, `alert_scope`), else the tags'
 *   (attribution.ts, docs/integrations/attribution.md).
 * - Severity: `alert_priority` P1…P5 when set; else Warn / Re-Warn → medium; else high.
 * - Fingerprint: `datadog:<aggreg_key>` (stable from trigger to recovery); else
 *   `datadog:<alert_id>:<sorted alert_scope>`; else a hash of the alert name, service and labels.
 * - `occurredAt` = `date` (epoch ms), else `last_updated`, else now.
 * - No delivery id: `$ID` is the id of the Datadog event, which changes with every notification;
 *   it is not a delivery id.
 * - Origins: `datadog:aggreg:<aggreg_key>`, and the deploy the tags name (`version` of unified
 *   service tagging, `git.commit.sha`, `commit`, …; see markers.ts).
 * - A monitor's test notification ("Test Notifications" in the monitor editor) is marked as a test:
 *   Datadog puts `[TEST]` before the monitor's name in the title and ends the message with "Test
 *   notification triggered by <user>.". So is a monitor tagged `test:true`.
 */
import { z } from 'zod';
import type { Severity } from '../../db/schema/incidents.js';
import {
  hashFingerprint,
  makeDescription,
  makeTitle,
  mapSeverity,
  nonEmpty,
  parseTime,
  parseWith,
  serviceFromLabels,
  toolFingerprint,
} from '../normalize.js';
import { attribute } from '../attribution.js';
import type { WebhookProvider } from '../types.js';
import { deployOrigins, marked, testLabel } from './markers.js';

/** A templated value: Datadog substitutes strings, but a hand-written template may leave numbers unquoted. */
const text = z
  .union([z.string(), z.number()])
  .transform((value) => String(value))
  .nullish();

const datadogPayloadSchema = z
  .looseObject({
    id: text,
    title: text,
    body: text,
    event_type: text,
    date: text,
    last_updated: text,
    alert_id: text,
    alert_title: text,
    alert_status: text,
    alert_transition: text,
    alert_priority: text,
    aggreg_key: text,
    alert_metric: text,
    alert_scope: text,
    hostname: text,
    tags: z.union([z.string(), z.array(z.string())]).nullish(),
    link: text,
    // Not read; a form-encoded delivery ("Encode as form") may carry it as a string.
    org: z.union([z.looseObject({ id: text, name: text }), z.string()]).nullish(),
  })
  .superRefine((payload, ctx) => {
    if (!nonEmpty(payload.title) && !nonEmpty(payload.alert_title)) {
      ctx.addIssue({
        code: 'custom',
        path: ['alert_title'],
        message: 'title or alert_title is required (use "$EVENT_TITLE" / "$ALERT_TITLE" in the payload template)',
      });
    }
  });

const transitionPrefix =
  /^\s*\[(?:P[1-5]|Triggered|Re-Triggered|Recovered|Warn|Re-Warn|No Data|Re-No Data|Renotify|Notify|TEST)\b[^\]]*\]\s*/i;

const isTestPrefix = (prefix: string) => /^\[TEST\]$/i.test(prefix);

/**
 * A test notification: `[TEST]` among either title's leading brackets, or Datadog's line in the
 * message (a plain search: a regex anchored on line starts is quadratic on blank lines, ADR 0163).
 */
function isTestNotification(prefixes: string[], title: string | undefined, body: string): boolean {
  if (prefixes.some(isTestPrefix)) return true;
  if (title !== undefined && splitDatadogTitle(title).prefixes.some(isTestPrefix)) return true;
  return body.includes('Test notification triggered by ');
}

/** `[P1] [Triggered on {service:checkout}] High error rate` → `High error rate` and its bracketed prefixes. */
export function splitDatadogTitle(title: string): { name: string; prefixes: string[] } {
  const prefixes: string[] = [];
  let rest = title;
  for (let match = transitionPrefix.exec(rest); match; match = transitionPrefix.exec(rest)) {
    prefixes.push(match[0].trim());
    rest = rest.slice(match[0].length);
  }
  return { name: rest.trim() === '' ? title.trim() : rest.trim(), prefixes };
}

/** `env:prod, service:checkout, monitor` → `{ env: 'prod', service: 'checkout', monitor: '' }`. */
export function parseDatadogTags(tags: string | string[] | null | undefined): Record<string, string> {
  const list = Array.isArray(tags) ? tags : (tags ?? '').split(',');
  const labels: Record<string, string> = {};
  for (const tag of list) {
    const trimmed = tag.trim();
    if (trimmed === '') continue;
    const colon = trimmed.indexOf(':');
    if (colon <= 0) labels[trimmed] = labels[trimmed] ?? '';
    else labels[trimmed.slice(0, colon).trim()] = trimmed.slice(colon + 1).trim();
  }
  return labels;
}

function normalizeScope(scope: string): string {
  return scope
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .sort()
    .join(',');
}

/**
 * Datadog wraps markdown bodies in `%%%` lines; this drops them. Line by line, in linear time:
 * the multiline regex it replaces (`/^\s*%%%\s*$/gm`) took quadratic time on a body of blank
 * lines, about five minutes of the api's event loop for a 1 MiB body (ADR 0163); any holder of a
 * valid key could send one.
 */
export function withoutMarkdownFences(body: string): string {
  return body
    .split('\n')
    .filter((line) => line.trim() !== '%%%')
    .join('\n');
}

function cleanBody(body: string | undefined): string | undefined {
  return body === undefined ? undefined : nonEmpty(withoutMarkdownFences(body));
}

export const datadogProvider: WebhookProvider = {
  name: 'datadog',
  parse(body) {
    const payload = parseWith(datadogPayloadSchema, body, 'datadog');
    const rawTitle = nonEmpty(payload.alert_title) ?? nonEmpty(payload.title) ?? '';
    const { name: alertName, prefixes } = splitDatadogTitle(rawTitle);
    const transition = nonEmpty(payload.alert_transition);
    // Without $ALERT_TRANSITION, fall back to the `[Recovered …]` prefix Datadog puts on titles.
    const recovered =
      transition !== undefined
        ? transition.toLowerCase() === 'recovered'
        : prefixes.some((prefix) => /^\[recovered\b/i.test(prefix));
    const labels = parseDatadogTags(payload.tags);
    const { service, attribution } = attribute({
      tool: 'datadog',
      tags: labels,
      title: nonEmpty(payload.title) ?? rawTitle,
      scope: payload.alert_scope ?? undefined,
      host: payload.hostname ?? undefined,
    });
    const transitionSeverity: Severity = transition && /warn/i.test(transition) ? 'medium' : 'high';
    const severity = mapSeverity(nonEmpty(payload.alert_priority), transitionSeverity);

    const aggregKey = nonEmpty(payload.aggreg_key);
    const alertId = nonEmpty(payload.alert_id);
    const scope = normalizeScope(payload.alert_scope ?? '');
    const fingerprint = aggregKey
      ? toolFingerprint('datadog', aggregKey)
      : alertId
        ? toolFingerprint('datadog', scope ? `${alertId}:${scope}` : alertId)
        : // The tag-order service, as before attribution: a stored alert's hash must not move.
          hashFingerprint('datadog', alertName, serviceFromLabels(labels), labels);

    const status = nonEmpty(payload.alert_status);
    const metric = nonEmpty(payload.alert_metric);
    const host = nonEmpty(payload.hostname);
    const priority = nonEmpty(payload.alert_priority);
    const link = nonEmpty(payload.link);
    const now = new Date();
    const cleaned = cleanBody(payload.body ?? undefined);
    const test = isTestNotification(prefixes, nonEmpty(payload.title), cleaned ?? '') || testLabel(labels);
    const origins = [
      aggregKey && `datadog:aggreg:${aggregKey}`,
      ...deployOrigins(service, [labels], { version: labels.version }),
    ];
    return {
      events: [
        marked(
          {
            kind: 'alert',
            status: recovered ? 'resolved' : 'firing',
            attribution,
            fingerprint,
            alertName,
            service,
            severity,
            title: makeTitle(alertName, status),
            description: makeDescription(
              [
                cleaned,
                status && `Status: ${status}`,
                transition && `Transition: ${transition}${priority ? ` (${priority})` : ''}`,
                metric && `Metric: ${metric}`,
                scope && `Scope: ${scope}`,
                host && `Host: ${host}`,
                link && `Link: ${link}`,
              ],
              labels,
            ),
            labels,
            occurredAt: parseTime(payload.date, parseTime(payload.last_updated, now)),
            raw: body,
          },
          origins,
          test,
        ),
      ],
    };
  },
};
