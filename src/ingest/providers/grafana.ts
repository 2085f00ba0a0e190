/**
 * Grafana unified alerting webhook contact point (payload `version: "1"`).
 * https://grafana.com/docs/grafana/latest/alerting/configure-notifications/manage-contact-points/integrations/webhook-notifier/
 *
 * The payload is Alertmanager's plus `orgId`, `state`, `title`, `message`, and per alert `values`,
 * `valueString`, `dashboardURL`, `panelURL`, `silenceURL`. Alerts map exactly as for Alertmanager;
 * the description also carries the evaluated values and the dashboard / panel links.
 * Grafana sends no delivery id.
 *
 * A contact point's test notification ("Test" in the UI, or the receivers test API) is marked as a
 * test: Grafana sends one alert labelled `alertname="TestAlert"`, `instance="Grafana"` (summary
 * "Notification test") under the group key `<receiver>-<label fingerprint>-<unix seconds>`, where a
 * rule's group key is always `{…}:{…}`; a test with custom labels keeps that group key. Legacy
 * alerting's webhook (Grafana 10 and before, no `version`) is not this format: its test
 * ("[Alerting] Test notification") is refused as its alerts are. Origins as for Alertmanager
 * (`grafana:group:<groupKey>`).
 */
import { z } from 'zod';
import { nonEmpty, parseWith } from '../normalize.js';
import type { WebhookProvider } from '../types.js';
import { groupOrigin } from './markers.js';
import {
  alertmanagerAlertSchema,
  alertmanagerGroupShape,
  alertsArray,
  normalizeAlertmanagerAlert,
  truncationNote,
  rawAlerts,
} from './alertmanager.js';

const grafanaAlertSchema = alertmanagerAlertSchema.extend({
  values: z.record(z.string(), z.unknown()).nullish(),
  valueString: z.string().optional(),
  dashboardURL: z.string().optional(),
  panelURL: z.string().optional(),
  silenceURL: z.string().optional(),
});

const grafanaPayloadSchema = z.looseObject({
  version: z.literal('1', { error: 'unsupported Grafana webhook version (expected "1")' }),
  ...alertmanagerGroupShape,
  orgId: z.number().optional(),
  state: z.string().optional(),
  title: z.string().optional(),
  message: z.string().optional(),
  alerts: alertsArray(grafanaAlertSchema),
});

/** `<receiver>-<16 hex label fingerprint>-<unix seconds>`: the group key of Grafana's test notification. */
const testGroupKey = /^[^{}]+-[0-9a-f]{16}-\d{9,11}$/;

/** Grafana's default test alert, in every version that has unified alerting. */
const isTestAlert = (labels: Record<string, string>) =>
  labels.alertname === 'TestAlert' && labels.instance === 'Grafana';

function formatValues(values: Record<string, unknown> | null | undefined): string | undefined {
  if (!values) return undefined;
  const entries = Object.entries(values).map(([key, value]) => `${key}=${String(value)}`);
  return entries.length > 0 ? entries.join(', ') : undefined;
}

export const grafanaProvider: WebhookProvider = {
  name: 'grafana',
  parse(body) {
    const payload = parseWith(grafanaPayloadSchema, body, 'grafana');
    const raw = rawAlerts(body);
    const testGroup = payload.groupKey !== undefined && testGroupKey.test(payload.groupKey);
    const origin = testGroup ? undefined : groupOrigin('grafana', payload.groupKey, payload.groupLabels);
    return {
      events: payload.alerts.map((alert, i) => {
        const values = nonEmpty(alert.valueString) ?? formatValues(alert.values);
        const dashboard = nonEmpty(alert.dashboardURL);
        const panel = nonEmpty(alert.panelURL);
        return normalizeAlertmanagerAlert(
          'grafana',
          alert,
          raw[i] ?? alert,
          [
            values && `Values: ${values}`,
            dashboard && `Dashboard: ${dashboard}`,
            panel && `Panel: ${panel}`,
            truncationNote(payload.truncatedAlerts),
          ],
          { origin, test: testGroup || isTestAlert(alert.labels) },
        );
      }),
    };
  },
};
