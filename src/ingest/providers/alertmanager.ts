/**
 * Prometheus Alertmanager webhook receiver (`webhook_configs`), payload `version: "4"`.
 * https://prometheus.io/docs/alerting/latest/configuration/#webhook_config
 *
 * One alert event per entry of `alerts`. Severity from the `severity` label, else `priority`;
 * the summary from the `summary` annotation, else `message` (older kube-prometheus rules); an
 * alert without `alertname` is named by its summary. Alertmanager's per-alert `fingerprint` (a hash of the
 * alert's labels) is the same while the alert fires and when it resolves, so it is used as is.
 * Alertmanager sends no delivery id (`groupKey` names the group, not the notification).
 *
 * Origins: the group (`alertmanager:group:<groupKey>`, unless the route groups by nothing) and any
 * deploy a label or annotation names (`commit`, `git_sha`, `deployment_id`, …; see markers.ts).
 * kube-prometheus's heartbeats `Watchdog` and `InfoInhibitor` (and `DeadMansSwitch`, Watchdog's
 * older name) and an alert labelled `test="true"` are marked as tests.
 */
import { z } from 'zod';
import {
  hashFingerprint,
  makeDescription,
  makeTitle,
  MAX_ALERTS_PER_DELIVERY,
  mapSeverity,
  nonEmpty,
  parseTime,
  parseWith,
  serviceFromLabels,
  toolFingerprint,
} from '../normalize.js';
import { attribute } from '../attribution.js';
import type { NormalizedAlert, WebhookProvider } from '../types.js';
import { deployOrigins, groupOrigin, isHeartbeat, marked, testLabel } from './markers.js';

const stringRecord = z.record(z.string(), z.string());

/** One alert as Alertmanager (and Grafana, which reuses the format) sends it. */
export const alertmanagerAlertSchema = z.looseObject({
  status: z.enum(['firing', 'resolved']),
  // Prometheus always sets `alertname`; an alert posted to Alertmanager's API by something else
  // may not, and refusing it refused its whole group (ADR 0217).
  labels: z.record(z.string(), z.string()),
  annotations: stringRecord.default({}),
  startsAt: z.string().optional(),
  endsAt: z.string().optional(),
  generatorURL: z.string().optional(),
  fingerprint: z.string().optional(),
});
export type AlertmanagerAlert = z.output<typeof alertmanagerAlertSchema>;

export function alertsArray<T extends z.ZodType>(alert: T) {
  return z.array(alert).max(MAX_ALERTS_PER_DELIVERY, `at most ${MAX_ALERTS_PER_DELIVERY} alerts per delivery`);
}

/** Group-level fields shared by Alertmanager and Grafana. */
export const alertmanagerGroupShape = {
  receiver: z.string(),
  status: z.enum(['firing', 'resolved']),
  groupLabels: stringRecord.optional(),
  commonLabels: stringRecord.optional(),
  commonAnnotations: stringRecord.optional(),
  externalURL: z.string().optional(),
  groupKey: z.string().optional(),
  truncatedAlerts: z.number().int().nonnegative().optional(),
};

const alertmanagerPayloadSchema = z.looseObject({
  version: z.literal('4', { error: 'unsupported Alertmanager webhook version (expected "4")' }),
  ...alertmanagerGroupShape,
  alerts: alertsArray(alertmanagerAlertSchema),
});

/** What the group says of each of its alerts: its origin, and whether the whole delivery is a test. */
export interface GroupMarks {
  origin?: string | undefined;
  test?: boolean;
}

/**
 * Maps one Alertmanager-format alert onto a NormalizedAlert. `extraParts` are added to the
 * description after the annotations (Grafana adds values and dashboard links).
 */
export function normalizeAlertmanagerAlert(
  provider: string,
  alert: AlertmanagerAlert,
  raw: unknown,
  extraParts: Array<string | undefined> = [],
  group: GroupMarks = {},
): NormalizedAlert {
  const labels: Record<string, string> = { ...alert.labels };
  const { service, attribution } = attribute({ tool: provider === 'grafana' ? 'grafana' : 'prometheus', labels });
  // Older kube-prometheus rules carry their text in a `message` annotation.
  const message = nonEmpty(alert.annotations.message);
  const summary = nonEmpty(alert.annotations.summary) ?? message;
  const description = nonEmpty(alert.annotations.description);
  const alertName = nonEmpty(labels.alertname) ?? summary ?? '(unnamed alert)';
  const runbook = nonEmpty(alert.annotations.runbook_url);
  const source = nonEmpty(alert.generatorURL);
  const fingerprint = nonEmpty(alert.fingerprint);
  const now = new Date();
  const normalized: NormalizedAlert = {
    kind: 'alert',
    status: alert.status,
    attribution,
    fingerprint: fingerprint
      ? toolFingerprint(provider, fingerprint)
      : // The label-order service, as before attribution: a stored alert's hash must not move.
        hashFingerprint(provider, alertName, serviceFromLabels(labels), labels),
    alertName,
    service,
    severity: mapSeverity(labels.severity ?? labels.priority),
    title: makeTitle(alertName, summary),
    description: makeDescription(
      [
        summary,
        message !== summary ? message : undefined,
        description,
        runbook && `Runbook: ${runbook}`,
        ...extraParts,
        source && `Source: ${source}`,
      ],
      labels,
    ),
    labels,
    occurredAt: alert.status === 'resolved' ? parseTime(alert.endsAt, now) : parseTime(alert.startsAt, now),
    raw,
  };
  return marked(
    normalized,
    [group.origin, ...deployOrigins(service, [labels, alert.annotations])],
    group.test === true || isHeartbeat(alertName) || testLabel(labels),
  );
}

/**
 * A group sent truncated (`max_alerts` on the receiver) says how many alerts it left out: each
 * alert's description says so, since those alerts reach no incident from this delivery.
 */
export function truncationNote(truncatedAlerts: number | undefined): string | undefined {
  return truncatedAlerts
    ? `The sender left ${truncatedAlerts} more alert(s) of this group out of the notification (truncatedAlerts).`
    : undefined;
}

/** The original (unparsed) alert objects, kept as evidence. */
export function rawAlerts(body: unknown): unknown[] {
  const alerts = (body as { alerts?: unknown }).alerts;
  return Array.isArray(alerts) ? alerts : [];
}

export const alertmanagerProvider: WebhookProvider = {
  name: 'alertmanager',
  parse(body) {
    const payload = parseWith(alertmanagerPayloadSchema, body, 'alertmanager');
    const raw = rawAlerts(body);
    const group = { origin: groupOrigin('alertmanager', payload.groupKey, payload.groupLabels) };
    return {
      events: payload.alerts.map((alert, i) =>
        normalizeAlertmanagerAlert(
          'alertmanager',
          alert,
          raw[i] ?? alert,
          [truncationNote(payload.truncatedAlerts)],
          group,
        ),
      ),
    };
  },
};
