import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  clip,
  hashFingerprint,
  makeDescription,
  makeTitle,
  mapSeverity,
  parseTime,
  serviceFromLabels,
  toolFingerprint,
} from '../../src/ingest/normalize.js';
import { alertmanagerProvider } from '../../src/ingest/providers/alertmanager.js';
import { datadogProvider, withoutMarkdownFences } from '../../src/ingest/providers/datadog.js';
import { genericProvider } from '../../src/ingest/providers/generic.js';
import { githubProvider } from '../../src/ingest/providers/github.js';
import { grafanaProvider } from '../../src/ingest/providers/grafana.js';
import { findProvider, providers } from '../../src/ingest/providers/index.js';
import { sentryProvider } from '../../src/ingest/providers/sentry.js';
import {
  type HeaderReader,
  type NormalizedAlert,
  type NormalizedChange,
  type NormalizedEvent,
  type ParsedDelivery,
  PayloadError,
  type WebhookProvider,
} from '../../src/ingest/types.js';

function fixture(name: string): any {
  return JSON.parse(readFileSync(new URL(`../fixtures/webhooks/${name}`, import.meta.url), 'utf8'));
}

function headers(values: Record<string, string> = {}): HeaderReader {
  const lower = Object.fromEntries(Object.entries(values).map(([k, v]) => [k.toLowerCase(), v]));
  return (name) => lower[name.toLowerCase()];
}

function at<T>(items: readonly T[], index: number): T {
  const item = items[index];
  if (item === undefined) throw new Error(`no item at index ${index} (length ${items.length})`);
  return item;
}

function asAlert(event: NormalizedEvent | undefined): NormalizedAlert {
  if (event?.kind !== 'alert') throw new Error(`expected an alert event, got ${event?.kind}`);
  return event;
}

function asChange(event: NormalizedEvent | undefined): NormalizedChange {
  if (!event || event.kind === 'alert') throw new Error(`expected a change event, got ${event?.kind}`);
  return event;
}

function alertsOf(delivery: ParsedDelivery): NormalizedAlert[] {
  return delivery.events.map(asAlert);
}

/** Shape checks every normalized event must pass. */
function expectWellFormed(event: NormalizedEvent): void {
  expect(event.title.length).toBeGreaterThanOrEqual(1);
  expect(event.title.length).toBeLessThanOrEqual(200);
  expect(event.description.length).toBeGreaterThanOrEqual(10);
  expect(event.description.length).toBeLessThanOrEqual(4000);
  expect(Number.isNaN(event.occurredAt.getTime())).toBe(false);
  for (const value of Object.values(event.labels)) expect(typeof value).toBe('string');
  if (event.kind === 'alert') {
    expect(event.fingerprint).toMatch(/^[a-z]+:.+/);
    expect(['critical', 'high', 'medium', 'low']).toContain(event.severity);
  }
}

function parse(provider: WebhookProvider, body: unknown, hdrs: Record<string, string> = {}): ParsedDelivery {
  const delivery = provider.parse(body, headers(hdrs));
  for (const event of delivery.events) expectWellFormed(event);
  return delivery;
}

function payloadError(fn: () => unknown): PayloadError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(PayloadError);
    const error = err as PayloadError;
    expect(error.details.length).toBeGreaterThan(0);
    for (const detail of error.details) expect(detail.message.length).toBeGreaterThan(0);
    return error;
  }
  throw new Error('expected a PayloadError');
}

function paths(error: PayloadError): string[] {
  return error.details.map((d) => d.path);
}

const sha256Fingerprint = (provider: string) => new RegExp(`^${provider}:h:[0-9a-f]{64}$`);

describe('provider registry', () => {
  it('has every provider keyed by its name', () => {
    expect(Object.keys(providers).sort()).toEqual([
      'alertmanager',
      'argocd',
      'datadog',
      'flagsmith',
      'flux',
      'generic',
      'github',
      'grafana',
      'launchdarkly',
      'sentry',
      'unleash',
    ]);
    for (const [name, provider] of Object.entries(providers)) expect(provider.name).toBe(name);
    expect(findProvider('grafana')).toBe(grafanaProvider);
    expect(findProvider('nope')).toBeUndefined();
    expect(findProvider('constructor')).toBeUndefined();
    expect(findProvider('toString')).toBeUndefined();
  });
});

describe('alertmanager', () => {
  const firing = fixture('alertmanager-firing.json');
  const resolved = fixture('alertmanager-resolved.json');

  it('maps a firing group to one alert per alert', () => {
    const delivery = parse(alertmanagerProvider, firing);
    expect(delivery.deliveryId).toBeUndefined();
    expect(delivery.ignored).toBeUndefined();
    const [errors, latency] = [at(alertsOf(delivery), 0), at(alertsOf(delivery), 1)];
    expect(delivery.events).toHaveLength(2);

    expect(errors).toMatchObject({
      kind: 'alert',
      status: 'firing',
      fingerprint: 'alertmanager:5f3c2a1b9d8e7f60',
      alertName: 'HighErrorRate',
      service: 'checkout',
      severity: 'critical',
      title: '[HighErrorRate] checkout 5xx error rate above 5%',
    });
    expect(errors.labels).toEqual(firing.alerts[0].labels);
    expect(errors.occurredAt.toISOString()).toBe('2024-05-14T09:30:12.345Z');
    expect(errors.description).toContain('checkout 5xx error rate above 5%');
    expect(errors.description).toContain('5xx responses are 7.3% of checkout requests');
    expect(errors.description).toContain('Runbook: https://runbooks.example.com/checkout/high-error-rate');
    expect(errors.description).toContain('Source: http://prometheus.example.com:9090/graph?');
    expect(errors.description).toContain('Labels: alertname=HighErrorRate, env=production,');
    expect(errors.raw).toEqual(firing.alerts[0]);

    expect(latency).toMatchObject({
      status: 'firing',
      fingerprint: 'alertmanager:a41b7e02c3d95f18',
      alertName: 'HighLatencyP99',
      service: 'checkout',
      severity: 'medium',
      title: '[HighLatencyP99] checkout p99 latency above 1.5s',
    });
    expect(latency.labels.route).toBe('/api/v1/orders');
    expect(latency.occurredAt.toISOString()).toBe('2024-05-14T09:31:42.001Z');
    expect(latency.description).not.toContain('Runbook:');
  });

  it('maps the resolved group to the same fingerprints, dated by endsAt', () => {
    const before = alertsOf(parse(alertmanagerProvider, firing));
    const after = alertsOf(parse(alertmanagerProvider, resolved));
    expect(after.map((a) => a.status)).toEqual(['resolved', 'resolved']);
    expect(after.map((a) => a.fingerprint)).toEqual(before.map((a) => a.fingerprint));
    expect(after.map((a) => a.occurredAt.toISOString())).toEqual([
      '2024-05-14T09:52:12.345Z',
      '2024-05-14T09:48:42.001Z',
    ]);
  });

  it('hashes labels when an alert has no fingerprint, independent of label order', () => {
    const body = structuredClone(firing);
    delete body.alerts[0].fingerprint;
    const reordered = structuredClone(body);
    reordered.alerts[0].labels = Object.fromEntries(Object.entries(body.alerts[0].labels as object).reverse());
    expect(Object.keys(reordered.alerts[0].labels)).not.toEqual(Object.keys(body.alerts[0].labels));
    const a = at(alertsOf(parse(alertmanagerProvider, body)), 0);
    const b = at(alertsOf(parse(alertmanagerProvider, reordered)), 0);
    expect(a.fingerprint).toMatch(sha256Fingerprint('alertmanager'));
    expect(b.fingerprint).toBe(a.fingerprint);
    expect(a.fingerprint).toBe(hashFingerprint('alertmanager', 'HighErrorRate', 'checkout', body.alerts[0].labels));
  });

  it('falls back to now for zero or missing times', () => {
    const body = structuredClone(resolved);
    body.alerts[0].endsAt = '0001-01-01T00:00:00Z';
    delete body.alerts[1].endsAt;
    const before = Date.now();
    const [a, b] = alertsOf(parse(alertmanagerProvider, body));
    for (const alert of [a, b]) {
      expect(alert?.occurredAt.getTime()).toBeGreaterThanOrEqual(before);
      expect(alert?.occurredAt.getTime()).toBeLessThanOrEqual(Date.now());
    }
  });

  it('names an alert without alertname by its summary, so its group is not refused (decision 217)', () => {
    const body = structuredClone(firing);
    delete body.alerts[1].labels.alertname;
    body.alerts[0].labels.alertname = '  ';
    body.alerts[0].annotations = {};
    const [unnamed, bySummary] = alertsOf(parse(alertmanagerProvider, body));
    expect(bySummary!.alertName).toBe(firing.alerts[1].annotations.summary);
    expect(bySummary!.title).toBe(firing.alerts[1].annotations.summary);
    expect(unnamed!.alertName).toBe('(unnamed alert)');
    expect(unnamed!.fingerprint).toBe(`alertmanager:${firing.alerts[0].fingerprint}`);
  });

  it('reads the message annotation of older rules, and the priority label', () => {
    const body = structuredClone(firing);
    body.alerts[0].annotations = { message: 'Pod checkout-1 is crash looping.' };
    delete body.alerts[0].labels.severity;
    body.alerts[0].labels.priority = 'P1';
    body.alerts[1].annotations.message = 'A second text.';
    const [a, b] = alertsOf(parse(alertmanagerProvider, body));
    expect(a).toMatchObject({
      title: `[${firing.alerts[0].labels.alertname}] Pod checkout-1 is crash looping.`,
      severity: 'critical',
    });
    expect(b!.description).toContain('A second text.');
    expect(b!.description.indexOf(firing.alerts[1].annotations.summary)).toBe(0);
  });

  it('rejects a version other than "4"', () => {
    for (const version of ['3', 4, undefined]) {
      const body = { ...structuredClone(firing), version };
      const error = payloadError(() => alertmanagerProvider.parse(body, headers()));
      expect(paths(error)).toEqual(['version']);
      expect(error.details[0]?.message).toContain('"4"');
    }
  });

  it('rejects bad statuses, non-string labels and non-objects', () => {
    const body = structuredClone(firing);
    body.alerts[0].status = 'pending';
    body.alerts[1].labels.severity = 3;
    expect(paths(payloadError(() => alertmanagerProvider.parse(body, headers())))).toEqual(
      expect.arrayContaining(['alerts.0.status', 'alerts.1.labels.severity']),
    );
    payloadError(() => alertmanagerProvider.parse('not json', headers()));
    payloadError(() => alertmanagerProvider.parse(null, headers()));
  });

  it('rejects more than 500 alerts', () => {
    const body = structuredClone(firing);
    body.alerts = Array.from({ length: 501 }, () => structuredClone(firing.alerts[0]));
    expect(paths(payloadError(() => alertmanagerProvider.parse(body, headers())))).toEqual(['alerts']);
    body.alerts.pop();
    expect(parse(alertmanagerProvider, body).events).toHaveLength(500);
  });

  it('says in each description how many alerts a truncated group left out', () => {
    expect(alertsOf(parse(alertmanagerProvider, firing)).every((a) => !a.description.includes('left'))).toBe(true); // truncatedAlerts 0
    const body = structuredClone(firing);
    body.truncatedAlerts = 37;
    const alerts = alertsOf(parse(alertmanagerProvider, body));
    expect(alerts).toHaveLength(2);
    for (const alert of alerts)
      expect(alert.description).toContain(
        'The sender left 37 more alert(s) of this group out of the notification (truncatedAlerts).',
      );
    const grafana = structuredClone(fixture('grafana-firing.json'));
    grafana.truncatedAlerts = 3;
    expect(at(alertsOf(parse(grafanaProvider, grafana)), 0).description).toContain('The sender left 3 more alert(s)');
  });

  it('keeps unknown extra fields', () => {
    const body = structuredClone(firing);
    body.somethingNew = { x: 1 };
    body.alerts[0].extra = 'kept';
    const alert = at(alertsOf(parse(alertmanagerProvider, body)), 0);
    expect((alert.raw as { extra: string }).extra).toBe('kept');
  });
});

describe('grafana', () => {
  const firing = fixture('grafana-firing.json');

  it('maps a unified alerting notification', () => {
    const delivery = parse(grafanaProvider, firing);
    expect(delivery.deliveryId).toBeUndefined();
    expect(delivery.events).toHaveLength(1);
    const alert = at(alertsOf(delivery), 0);
    expect(alert).toMatchObject({
      kind: 'alert',
      status: 'firing',
      fingerprint: 'grafana:c6eadffa33fcdf37',
      alertName: 'HighErrorRate',
      service: 'checkout',
      severity: 'critical',
      title: '[HighErrorRate] checkout 5xx error rate above 5%',
    });
    expect(alert.labels).toEqual(firing.alerts[0].labels);
    expect(alert.occurredAt.toISOString()).toBe('2024-05-14T09:30:03.157Z');
    expect(alert.description).toContain(`Values: ${firing.alerts[0].valueString}`);
    expect(alert.description).toContain('Dashboard: https://grafana.example.com/d/checkout-red?orgId=1');
    expect(alert.description).toContain('Runbook: https://runbooks.example.com/checkout/high-error-rate');
    expect(alert.raw).toEqual(firing.alerts[0]);
  });

  it('formats values when there is no valueString, and defaults severity to medium', () => {
    const body = structuredClone(firing);
    delete body.alerts[0].valueString;
    delete body.alerts[0].labels.severity;
    const alert = at(alertsOf(parse(grafanaProvider, body)), 0);
    expect(alert.description).toContain('Values: B=0.0731, C=1');
    expect(alert.severity).toBe('medium');
  });

  it('resolves to the same fingerprint', () => {
    const body = structuredClone(firing);
    body.status = 'resolved';
    body.alerts[0].status = 'resolved';
    body.alerts[0].endsAt = '2024-05-14T11:41:03.157076+02:00';
    const alert = at(alertsOf(parse(grafanaProvider, body)), 0);
    expect(alert.status).toBe('resolved');
    expect(alert.fingerprint).toBe('grafana:c6eadffa33fcdf37');
    expect(alert.occurredAt.toISOString()).toBe('2024-05-14T09:41:03.157Z');
  });

  it('rejects an Alertmanager payload, and names an alert without alertname by its summary', () => {
    const am = fixture('alertmanager-firing.json');
    const error = payloadError(() => grafanaProvider.parse(am, headers()));
    expect(error.message).toBe('grafana payload is invalid');
    expect(paths(error)).toEqual(['version']);
    const body = structuredClone(firing);
    delete body.alerts[0].labels.alertname;
    const alert = at(alertsOf(parse(grafanaProvider, body)), 0);
    expect(alert.alertName).toBe(body.alerts[0].annotations.summary ?? '(unnamed alert)');
  });
});

describe('datadog', () => {
  const triggered = fixture('datadog-triggered.json');
  const recovered = fixture('datadog-recovered.json');
  const labels = { env: 'production', monitor: '', service: 'checkout', team: 'payments' };

  it('maps a triggered monitor notification', () => {
    const delivery = parse(datadogProvider, triggered, { 'x-delivery-id': 'ignored' });
    expect(delivery.deliveryId).toBeUndefined();
    const alert = at(alertsOf(delivery), 0);
    expect(delivery.events).toHaveLength(1);
    expect(alert).toMatchObject({
      kind: 'alert',
      status: 'firing',
      fingerprint: 'datadog:8c1a6e5b2f0d4c7e9a3b1d2f6e8c0a4b',
      alertName: 'High error rate on checkout',
      service: 'checkout',
      severity: 'critical',
      labels,
    });
    expect(alert.title).toBe(makeTitle('High error rate on checkout', triggered.alert_status));
    expect(alert.title.startsWith('[High error rate on checkout] trace.http.request.errors over')).toBe(true);
    expect(alert.occurredAt.toISOString()).toBe('2024-05-14T09:30:00.000Z');
    expect(alert.description).toContain('5xx error rate on checkout is above 5% for the last 5 minutes.');
    expect(alert.description).not.toContain('%%%');
    expect(alert.description).toContain('Transition: Triggered (P1)');
    expect(alert.description).toContain('Link: https://app.datadoghq.com/event/event?id=7574651212382451718');
    expect(alert.raw).toEqual(triggered);
  });

  it('drops the %%% fence lines in linear time, even on a body of a million blank lines', () => {
    expect(withoutMarkdownFences('%%%\nline one\n  %%%  \nline %%% two\r\n%%%\r\n\n')).toBe(
      'line one\nline %%% two\r\n\n',
    );
    // The multiline regex this replaced took minutes on such a body (quadratic in the newlines).
    const started = performance.now();
    const alert = at(
      alertsOf(parse(datadogProvider, { ...triggered, body: `${'\n'.repeat(1_000_000)}%%%\nDisk full\n%%%` })),
      0,
    );
    expect(performance.now() - started).toBeLessThan(2000);
    expect(alert.description).toContain('Disk full');
    expect(alert.description).not.toContain('%%%');
  });

  it('maps the recovery of the same monitor to the same fingerprint', () => {
    const before = at(alertsOf(parse(datadogProvider, triggered)), 0);
    const after = at(alertsOf(parse(datadogProvider, recovered)), 0);
    expect(after).toMatchObject({
      status: 'resolved',
      fingerprint: before.fingerprint,
      alertName: before.alertName,
      service: 'checkout',
      severity: 'critical',
      labels,
    });
    expect(after.occurredAt.toISOString()).toBe('2024-05-14T09:52:00.000Z');
  });

  it('treats every transition but Recovered as firing', () => {
    for (const transition of ['Triggered', 'Re-Triggered', 'Warn', 'Re-Warn', 'No Data', 'Renotify']) {
      const alert = at(alertsOf(parse(datadogProvider, { ...triggered, alert_transition: transition })), 0);
      expect(alert.status, transition).toBe('firing');
    }
    const alert = at(alertsOf(parse(datadogProvider, { ...triggered, alert_transition: 'RECOVERED' })), 0);
    expect(alert.status).toBe('resolved');
  });

  it('derives severity from priority, else from the transition', () => {
    const severity = (body: object) => at(alertsOf(parse(datadogProvider, body)), 0).severity;
    expect(severity({ ...triggered, alert_priority: 'P2' })).toBe('high');
    expect(severity({ ...triggered, alert_priority: 'P3' })).toBe('medium');
    expect(severity({ ...triggered, alert_priority: 'P5' })).toBe('low');
    expect(severity({ ...triggered, alert_priority: '', alert_transition: 'Warn' })).toBe('medium');
    expect(severity({ ...triggered, alert_priority: '', alert_transition: 'Triggered' })).toBe('high');
  });

  it('falls back to alert id + scope, then to a hash', () => {
    const noKey = { ...triggered, aggreg_key: '' };
    const byScope = at(alertsOf(parse(datadogProvider, noKey)), 0);
    expect(byScope.fingerprint).toBe('datadog:91234567:env:production,service:checkout');
    const scopeReordered = at(
      alertsOf(parse(datadogProvider, { ...noKey, alert_scope: 'service:checkout, env:production' })),
      0,
    );
    expect(scopeReordered.fingerprint).toBe(byScope.fingerprint);
    const noScope = at(alertsOf(parse(datadogProvider, { ...noKey, alert_scope: '' })), 0);
    expect(noScope.fingerprint).toBe('datadog:91234567');

    const bare = { title: triggered.title, tags: 'service:checkout,env:production' };
    const hashed = at(alertsOf(parse(datadogProvider, bare)), 0);
    expect(hashed.fingerprint).toMatch(sha256Fingerprint('datadog'));
    const reordered = at(alertsOf(parse(datadogProvider, { ...bare, tags: 'env:production, service:checkout' })), 0);
    expect(reordered.fingerprint).toBe(hashed.fingerprint);
    const recoveredBare = at(alertsOf(parse(datadogProvider, { ...bare, title: recovered.title })), 0);
    expect(recoveredBare.status).toBe('resolved');
    expect(recoveredBare.fingerprint).toBe(hashed.fingerprint);
    expect(hashed.alertName).toBe('High error rate on checkout');
    expect(hashed.occurredAt.getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it('requires title or alert_title', () => {
    const error = payloadError(() =>
      datadogProvider.parse({ ...triggered, title: '', alert_title: undefined }, headers()),
    );
    expect(error.message).toBe('datadog payload is invalid');
    expect(paths(error)).toEqual(['alert_title']);
    expect(paths(payloadError(() => datadogProvider.parse({ ...triggered, tags: 5 }, headers())))).toEqual(['tags']);
    payloadError(() => datadogProvider.parse([], headers()));
  });
});

describe('sentry', () => {
  const eventAlert = fixture('sentry-event-alert.json');
  const legacy = fixture('sentry-legacy.json');

  it('maps an integration-platform issue alert', () => {
    const delivery = parse(sentryProvider, eventAlert, {
      'Sentry-Hook-Resource': 'event_alert',
      'Request-ID': 'f3b8a2c1-7d6e-4f5a-9b8c-1d2e3f4a5b6c',
    });
    // The delivery id is the event and the rule, not Sentry's Request-ID (new on every retry).
    const ruleKey = createHash('sha256')
      .update('Checkout: new unhandled errors in production')
      .digest('hex')
      .slice(0, 16);
    expect(delivery.deliveryId).toBe(`event:9c4e1f7ab2d34e5f8a6b0c1d2e3f4a5b:${ruleKey}`);
    const retried = parse(sentryProvider, eventAlert, {
      'Sentry-Hook-Resource': 'event_alert',
      'Request-ID': '0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a',
    });
    expect(retried.deliveryId).toBe(delivery.deliveryId);
    expect(delivery.events).toHaveLength(1);
    const alert = at(alertsOf(delivery), 0);
    expect(alert).toMatchObject({
      kind: 'alert',
      status: 'firing',
      fingerprint: 'sentry:4512398765',
      alertName: 'PaymentGatewayTimeout: Timed out calling payments-gateway after 10s',
      service: 'checkout',
      severity: 'high',
      title: '[PaymentGatewayTimeout: Timed out calling payments-gateway after 10s] /api/v1/orders',
    });
    expect(alert.labels).toEqual({
      environment: 'production',
      handled: 'no',
      level: 'error',
      mechanism: 'django',
      release: 'checkout@2024.05.14-1',
      runtime: 'CPython 3.12.3',
      server_name: 'checkout-7d9f8b6c5-x2k4p',
      transaction: '/api/v1/orders',
      url: 'https://shop.example.com/api/v1/orders',
    });
    expect(alert.occurredAt.toISOString()).toBe('2024-05-14T09:29:47.512Z');
    expect(alert.description).toContain('Alert rule: Checkout: new unhandled errors in production');
    expect(alert.description).toContain('Culprit: /api/v1/orders');
    expect(alert.description).toContain(`Link: ${eventAlert.data.event.web_url}`);
    expect(alert.raw).toEqual(eventAlert);
  });

  it('recognises the issue-alert format without the header', () => {
    const alert = at(alertsOf(parse(sentryProvider, eventAlert)), 0);
    expect(alert.fingerprint).toBe('sentry:4512398765');
  });

  it('maps a legacy webhook plugin payload', () => {
    const delivery = parse(sentryProvider, legacy);
    expect(delivery.deliveryId).toBe('event:3b7d2e9c1a4f4b6d8e0f2a4c6e8b0d1f');
    const alert = at(alertsOf(delivery), 0);
    expect(alert).toMatchObject({
      kind: 'alert',
      status: 'firing',
      fingerprint: 'sentry:4512401234',
      alertName: "KeyError: 'currency'",
      service: 'checkout',
      severity: 'critical',
      title: "[KeyError: 'currency'] checkout.pricing.currency in convert",
    });
    expect(alert.labels).toMatchObject({
      environment: 'production',
      level: 'fatal',
      transaction: '/api/v1/cart/total',
    });
    expect(alert.occurredAt.toISOString()).toBe('2024-05-14T09:32:03.836Z');
    expect(alert.description).toContain('Alert rule: Checkout: new unhandled errors in production');
    expect(alert.description).toContain(`Link: ${legacy.url}`);
  });

  it('uses the service tag when there is no project slug, and hashes when there is no issue id', () => {
    const body = structuredClone(eventAlert);
    delete body.data.event.url;
    delete body.data.event.issue_id;
    body.data.event.tags.push(['service', 'checkout-api']);
    const alert = at(alertsOf(parse(sentryProvider, body)), 0);
    expect(alert.service).toBe('checkout-api');
    expect(alert.fingerprint).toMatch(sha256Fingerprint('sentry'));
    // Per-event tags (user, server) do not change the hash.
    body.data.event.tags = body.data.event.tags.map(([k, v]: [string, string]) => [
      k,
      k === 'server_name' ? 'other-pod' : v,
    ]);
    expect(at(alertsOf(parse(sentryProvider, body)), 0).fingerprint).toBe(alert.fingerprint);
  });

  it('ignores other integration-platform resources', () => {
    const delivery = parse(
      sentryProvider,
      { action: 'created', data: {} },
      { 'sentry-hook-resource': 'installation', 'request-id': 'abc' },
    );
    expect(delivery).toEqual({ events: [], ignored: 'sentry resource installation is not used' });
  });

  it('records an issue resolved in Sentry as the recovery of its issue alert', () => {
    const issueResolved = fixture('sentry-issue-resolved.json');
    const delivery = parse(sentryProvider, issueResolved, {
      'sentry-hook-resource': 'issue',
      'sentry-hook-timestamp': '1715681400',
    });
    // No delivery id: Sentry's retries are answered by the body hash.
    expect(delivery.deliveryId).toBeUndefined();
    const [alert, ...rest] = alertsOf(delivery);
    expect(rest).toEqual([]);
    expect(alert).toMatchObject({
      status: 'resolved',
      // The fingerprint of the issue's alerts (the event-alert fixture is the same issue).
      fingerprint: at(alertsOf(parse(sentryProvider, eventAlert)), 0).fingerprint,
      alertName: 'PaymentGatewayTimeout: Timed out calling payments-gateway after 10s',
      service: 'checkout',
    });
    expect(alert!.occurredAt.toISOString()).toBe('2024-05-14T10:10:00.000Z');
    expect(alert!.description).toContain('Resolved in Sentry.');
    expect(alert!.description).toContain('Link: https://acme-shop.sentry.io/issues/4512398765/');
    // Told by its shape without the header; the time is then the time of receipt.
    const before = Date.now();
    const byShape = at(alertsOf(parse(sentryProvider, issueResolved)), 0);
    expect(byShape).toMatchObject({ status: 'resolved', fingerprint: 'sentry:4512398765' });
    expect(byShape.occurredAt.getTime()).toBeGreaterThanOrEqual(before);
  });

  it('ignores the other issue actions, and refuses a resolved issue without an id', () => {
    const issueResolved = fixture('sentry-issue-resolved.json');
    for (const action of ['created', 'assigned', 'archived', 'unresolved', 'ignored']) {
      expect(parse(sentryProvider, { ...issueResolved, action }, { 'sentry-hook-resource': 'issue' })).toEqual({
        events: [],
        ignored: `sentry issue action ${action} is not used`,
      });
    }
    const noId = structuredClone(issueResolved);
    delete noId.data.issue.id;
    expect(paths(payloadError(() => sentryProvider.parse(noId, headers({ 'sentry-hook-resource': 'issue' }))))).toEqual(
      ['data.issue.id'],
    );
    expect(
      paths(
        payloadError(() => sentryProvider.parse({ action: 5, data: {} }, headers({ 'sentry-hook-resource': 'issue' }))),
      ),
    ).toEqual(['action', 'data.issue']);
  });

  it('maps a metric alert: critical and warning fire, resolved recovers, one fingerprint per rule', () => {
    const critical = fixture('sentry-metric-alert-critical.json');
    const fired = at(alertsOf(parse(sentryProvider, critical, { 'sentry-hook-resource': 'metric_alert' })), 0);
    expect(fired).toMatchObject({
      status: 'firing',
      fingerprint: 'sentry:metric:88',
      alertName: 'Checkout error volume',
      service: 'checkout',
      severity: 'critical',
      title: '[Checkout error volume] Critical: Checkout error volume',
      labels: { environment: 'production', projects: 'checkout' },
    });
    expect(fired.occurredAt.toISOString()).toBe('2024-05-14T09:30:00.000Z');
    expect(fired.description).toContain('1204 events in the last 10 minutes');
    expect(fired.description).toContain('Metric: count() where level:error');
    expect(fired.description).toContain('Link: https://acme-shop.sentry.io/alerts/rules/details/88/?alert=1207');

    const warning = at(alertsOf(parse(sentryProvider, { ...critical, action: 'warning' })), 0);
    expect(warning).toMatchObject({ status: 'firing', fingerprint: 'sentry:metric:88', severity: 'medium' });

    const closed = structuredClone(critical);
    closed.action = 'resolved';
    closed.data.metric_alert.date_closed = '2024-05-14T09:52:00.000000Z';
    closed.data.metric_alert.alert_rule.projects = ['checkout', 'payments'];
    const resolved = at(alertsOf(parse(sentryProvider, closed, { 'sentry-hook-resource': 'metric_alert' })), 0);
    expect(resolved).toMatchObject({
      status: 'resolved',
      fingerprint: 'sentry:metric:88',
      service: null,
      labels: { projects: 'checkout,payments' },
    });
    expect(resolved.occurredAt.toISOString()).toBe('2024-05-14T09:52:00.000Z');
  });

  it('refuses a metric alert with an unknown action, without a rule id, or without any name', () => {
    const critical = fixture('sentry-metric-alert-critical.json');
    const hdrs = headers({ 'sentry-hook-resource': 'metric_alert' });
    expect(paths(payloadError(() => sentryProvider.parse({ ...critical, action: 'triggered' }, hdrs)))).toEqual([
      'action',
    ]);
    const noRule = structuredClone(critical);
    delete noRule.data.metric_alert.alert_rule.id;
    expect(paths(payloadError(() => sentryProvider.parse(noRule, hdrs)))).toEqual(['data.metric_alert.alert_rule.id']);
    const unnamed = structuredClone(critical);
    delete unnamed.data.metric_alert.alert_rule.name;
    delete unnamed.data.metric_alert.title;
    expect(at(alertsOf(parse(sentryProvider, unnamed, { 'sentry-hook-resource': 'metric_alert' })), 0).alertName).toBe(
      'Critical: Checkout error volume',
    );
    delete unnamed.data.description_title;
    expect(paths(payloadError(() => sentryProvider.parse(unnamed, hdrs)))).toEqual([
      'data.metric_alert.alert_rule.name',
    ]);
  });

  it('reads the title of a Sentry 8 or 9 legacy payload from event.metadata.title, else the message', () => {
    // The shape of the plugin's callbacks in Sentry 8 and 9: no event.title.
    const old = {
      project: 'alerta5',
      project_slug: 'alerta5',
      culprit: 'raven.scripts.runner in main',
      url: 'https://sentry.io/alertaio/alerta5/issues/541485531/',
      level: 'error',
      message: 'This is an example Python exception',
      id: '541485531',
      event: {
        event_id: '0476a4a2ad8c4bd5a0d5a1b7f6f7a3d1',
        tags: [['level', 'error']],
        metadata: { title: 'ExampleError: an example Python exception' },
      },
    };
    const alert = at(alertsOf(parse(sentryProvider, old)), 0);
    expect(alert).toMatchObject({
      fingerprint: 'sentry:541485531',
      alertName: 'ExampleError: an example Python exception',
      service: 'alerta5',
      severity: 'high',
    });
    const noMetadata = structuredClone(old) as Record<string, any>;
    delete noMetadata.event.metadata;
    expect(at(alertsOf(parse(sentryProvider, noMetadata)), 0).alertName).toBe('This is an example Python exception');
  });

  it('rejects payloads without an event title or issue id', () => {
    const a = structuredClone(eventAlert);
    delete a.data.event.title;
    const error = payloadError(() => sentryProvider.parse(a, headers({ 'sentry-hook-resource': 'event_alert' })));
    expect(error.message).toBe('sentry payload is invalid');
    expect(paths(error)).toEqual(['data.event.title']);

    const b = structuredClone(legacy);
    delete b.id;
    expect(paths(payloadError(() => sentryProvider.parse(b, headers())))).toEqual(['id']);
    const c = structuredClone(legacy);
    delete c.event.title; // and its message is empty, its metadata has no title
    expect(paths(payloadError(() => sentryProvider.parse(c, headers())))).toEqual(['event.title']);
  });
});

describe('github', () => {
  const deploymentStatus = fixture('github-deployment-status.json');
  const push = fixture('github-push.json');
  const delivery = '5a1e9c40-11d3-11ef-8a4f-1e2b3c4d5e6f';

  it('maps deployment_status to a deployment event', () => {
    const parsed = parse(githubProvider, deploymentStatus, {
      'X-GitHub-Event': 'deployment_status',
      'X-GitHub-Delivery': delivery,
    });
    expect(parsed.deliveryId).toBe(delivery);
    expect(parsed.events).toHaveLength(1);
    const change = asChange(parsed.events[0]);
    expect(change).toMatchObject({
      kind: 'deployment',
      service: 'checkout',
      title: 'Deployment of example-shop/checkout@3f2c9a7 to production: success',
      labels: {
        environment: 'production',
        state: 'success',
        sha: '3f2c9a7e5b1d4c8f9e0a6b2d7c4e1f3a5b8c9d0e',
        ref: 'main',
        repository: 'example-shop/checkout',
        creator: 'mchen',
      },
    });
    expect(change.occurredAt.toISOString()).toBe('2024-05-14T09:24:51.000Z');
    expect(change.description).toContain('Deployed checkout@2024.05.14-1 to production (12/12 pods ready)');
    expect(change.description).toContain('Details: https://github.com/example-shop/checkout/actions/runs/9087654321');
  });

  it('maps push to one code_change event', () => {
    const parsed = parse(githubProvider, push, { 'x-github-event': 'push', 'x-github-delivery': delivery });
    expect(parsed.deliveryId).toBe(delivery);
    expect(parsed.events).toHaveLength(1);
    const change = asChange(parsed.events[0]);
    expect(change).toMatchObject({
      kind: 'code_change',
      service: 'checkout',
      title: 'Push to example-shop/checkout@main: 2 commits by mchen',
      labels: {
        ref: 'refs/heads/main',
        repository: 'example-shop/checkout',
        head_commit: '3f2c9a7e5b1d4c8f9e0a6b2d7c4e1f3a5b8c9d0e',
        pusher: 'mchen',
      },
    });
    expect(change.occurredAt.toISOString()).toBe('2024-05-14T09:20:54.000Z');
    expect(change.description).toContain('- 9b1e4d2 Lower payments-gateway client timeout to 10s (mchen)');
    expect(change.description).toContain(
      '- 3f2c9a7 Merge pull request #1412 from example-shop/payments-timeout (mchen)',
    );
    expect(change.description).toContain(`Compare: ${push.compare}`);
  });

  it('ignores ping and unused event types', () => {
    expect(
      parse(
        githubProvider,
        { zen: 'Keep it logically awesome.', hook_id: 1 },
        { 'x-github-event': 'ping', 'x-github-delivery': delivery },
      ),
    ).toEqual({
      events: [],
      ignored: 'ping',
      deliveryId: delivery,
    });
    expect(parse(githubProvider, {}, { 'x-github-event': 'issues' })).toEqual({
      events: [],
      ignored: 'event type issues is not used',
    });
  });

  it('requires the x-github-event header', () => {
    const error = payloadError(() => githubProvider.parse(push, headers({ 'x-github-delivery': delivery })));
    expect(paths(error)).toEqual(['headers.x-github-event']);
  });

  it('rejects malformed deployment_status and push payloads', () => {
    const bad = structuredClone(deploymentStatus);
    delete bad.deployment.sha;
    const error = payloadError(() => githubProvider.parse(bad, headers({ 'x-github-event': 'deployment_status' })));
    expect(error.message).toBe('github payload is invalid');
    expect(paths(error)).toEqual(['deployment.sha']);
    const badPush = structuredClone(push);
    delete badPush.pusher;
    expect(paths(payloadError(() => githubProvider.parse(badPush, headers({ 'x-github-event': 'push' }))))).toEqual([
      'pusher',
    ]);
  });
});

describe('generic', () => {
  const single = fixture('generic-single.json');
  const batch = fixture('generic-batch.json');

  it('maps one alert object', () => {
    const delivery = parse(genericProvider, single, { 'X-Delivery-Id': 'dlv-20240514-0001' });
    expect(delivery.deliveryId).toBe('dlv-20240514-0001');
    expect(delivery.events).toHaveLength(1);
    const alert = at(alertsOf(delivery), 0);
    expect(alert).toMatchObject({
      kind: 'alert',
      status: 'firing',
      fingerprint: 'generic:checkout-high-error-rate-production',
      alertName: 'HighErrorRate',
      service: 'checkout',
      severity: 'critical',
      title: '[HighErrorRate] checkout 5xx error rate above 5%',
      labels: { env: 'production', region: 'eu-west-1', team: 'payments' },
      description:
        'checkout 5xx error rate above 5%\n\n5xx responses are 7.3% of checkout requests over the last 5 minutes (threshold 5%).\n\nLabels: env=production, region=eu-west-1, team=payments',
    });
    expect(alert.occurredAt.toISOString()).toBe('2024-05-14T09:30:00.000Z');
    expect(alert.raw).toEqual(single);
  });

  it('maps a batch', () => {
    const delivery = parse(genericProvider, batch, { 'idempotency-key': 'key-1' });
    expect(delivery.deliveryId).toBe('key-1');
    const [errors, backlog, disk] = [0, 1, 2].map((i) => at(alertsOf(delivery), i));
    expect(delivery.events).toHaveLength(3);

    expect(errors).toMatchObject({
      status: 'firing',
      alertName: 'HighErrorRate',
      service: 'checkout',
      severity: 'critical',
      labels: { service: 'checkout', env: 'production' },
    });
    expect(errors?.fingerprint).toBe(
      hashFingerprint('generic', 'HighErrorRate', 'checkout', { env: 'production', service: 'checkout' }),
    );
    expect(errors?.occurredAt.toISOString()).toBe('2024-05-14T09:30:00.000Z');

    expect(backlog).toMatchObject({
      status: 'resolved',
      fingerprint: 'generic:order-worker-queue-backlog',
      service: 'order-worker',
      severity: 'medium',
      title: 'QueueBacklog',
    });
    expect(backlog?.occurredAt.toISOString()).toBe('2024-05-14T10:00:00.000Z');

    expect(disk).toMatchObject({
      status: 'firing',
      alertName: 'DiskAlmostFull',
      service: null,
      severity: 'medium',
      title: 'DiskAlmostFull',
      description: '(no details)',
      labels: {},
    });
    expect(disk?.fingerprint).toMatch(sha256Fingerprint('generic'));
    expect(disk?.raw).toEqual(batch.alerts[2]);
  });

  it('produces stable hash fingerprints across label order, and different ones for different labels', () => {
    const one = { name: 'HighErrorRate', labels: { a: '1', b: '2', service: 'checkout' } };
    const two = { name: 'HighErrorRate', status: 'resolved', labels: { service: 'checkout', b: '2', a: '1' } };
    const fp1 = at(alertsOf(parse(genericProvider, one)), 0).fingerprint;
    const fp2 = at(alertsOf(parse(genericProvider, two)), 0).fingerprint;
    expect(fp1).toBe(fp2);
    const fp3 = at(alertsOf(parse(genericProvider, { ...one, labels: { ...one.labels, b: '3' } })), 0).fingerprint;
    expect(fp3).not.toBe(fp1);
  });

  it('rejects an empty batch, more than 500 alerts, and bad fields', () => {
    const empty = payloadError(() => genericProvider.parse({ alerts: [] }, headers()));
    expect(empty.message).toBe('generic payload is invalid');
    expect(paths(empty)).toEqual(['alerts']);

    const tooMany = { alerts: Array.from({ length: 501 }, (_, i) => ({ name: `Alert${i}` })) };
    expect(paths(payloadError(() => genericProvider.parse(tooMany, headers())))).toEqual(['alerts']);
    expect(parse(genericProvider, { alerts: tooMany.alerts.slice(0, 500) }).events).toHaveLength(500);

    expect(paths(payloadError(() => genericProvider.parse({ severity: 'high' }, headers())))).toEqual(['name']);
    expect(paths(payloadError(() => genericProvider.parse({ name: 'x'.repeat(201) }, headers())))).toEqual(['name']);
    expect(paths(payloadError(() => genericProvider.parse({ name: 'A', status: 'open' }, headers())))).toEqual([
      'status',
    ]);
    expect(paths(payloadError(() => genericProvider.parse({ name: 'A', startsAt: 'yesterday' }, headers())))).toEqual([
      'startsAt',
    ]);
    expect(paths(payloadError(() => genericProvider.parse({ name: 'A', labels: { n: 1 } }, headers())))).toEqual([
      'labels.n',
    ]);
    expect(paths(payloadError(() => genericProvider.parse({ name: 'A', fingerprint: '' }, headers())))).toEqual([
      'fingerprint',
    ]);
    expect(
      paths(payloadError(() => genericProvider.parse({ alerts: [{ name: 'A' }, { summary: 'no name' }] }, headers()))),
    ).toEqual(['alerts.1.name']);
  });
});

describe('normalize helpers', () => {
  it('maps severities', () => {
    const table: Array<[string | undefined | null, string]> = [
      ['critical', 'critical'],
      ['CRIT', 'critical'],
      ['fatal', 'critical'],
      ['emergency', 'critical'],
      ['page', 'critical'],
      ['P1', 'critical'],
      ['sev1', 'critical'],
      ['Disaster', 'critical'],
      ['high', 'high'],
      ['error', 'high'],
      ['ERR', 'high'],
      ['major', 'high'],
      ['p2', 'high'],
      ['SEV2', 'high'],
      ['warning', 'medium'],
      ['warn', 'medium'],
      ['medium', 'medium'],
      ['moderate', 'medium'],
      ['Average', 'medium'],
      ['p3', 'medium'],
      ['sev3', 'medium'],
      ['low', 'low'],
      ['info', 'low'],
      ['informational', 'low'],
      ['minor', 'low'],
      ['debug', 'low'],
      ['notice', 'low'],
      ['p4', 'low'],
      ['P5', 'low'],
      ['sev4', 'low'],
      ['sev5', 'low'],
      [' Warning ', 'medium'],
      ['whatever', 'medium'],
      ['', 'medium'],
      [undefined, 'medium'],
      [null, 'medium'],
    ];
    for (const [input, expected] of table) expect(mapSeverity(input), String(input)).toBe(expected);
    expect(mapSeverity('unknown', 'high')).toBe('high');
    expect(mapSeverity(undefined, 'low')).toBe('low');
  });

  it('builds fingerprints', () => {
    expect(toolFingerprint('alertmanager', 'abc')).toBe('alertmanager:abc');
    const a = hashFingerprint('generic', 'X', null, { b: '2', a: '1' });
    expect(a).toMatch(sha256Fingerprint('generic'));
    expect(hashFingerprint('generic', 'X', null, { a: '1', b: '2' })).toBe(a);
    expect(hashFingerprint('generic', 'X', '', { a: '1', b: '2' })).toBe(a);
    expect(hashFingerprint('generic', 'X', 'svc', { a: '1', b: '2' })).not.toBe(a);
    expect(hashFingerprint('other', 'X', null, { a: '1', b: '2' })).not.toBe(a.replace('generic', 'other'));
  });

  it('pads short descriptions and clips long ones', () => {
    expect(makeDescription([], {})).toBe('(no details)');
    expect(makeDescription([undefined, null, '  '], {})).toBe('(no details)');
    expect(makeDescription(['abc'], {})).toBe('abc (no details)');
    expect(makeDescription(['0123456789'], {})).toBe('0123456789');
    expect(makeDescription(['one', 'two'], { b: '2', a: '1' })).toBe('one\n\ntwo\n\nLabels: a=1, b=2');
    const long = makeDescription(['x'.repeat(5000)], { a: '1' });
    expect(long).toHaveLength(4000);
    // The long parts are cut, the short ones (links, labels) kept whole.
    expect(long.endsWith('…\n\nLabels: a=1')).toBe(true);
    const runbook = 'Runbook: https://runbooks.example.com/checkout';
    const two = makeDescription(['s'.repeat(5000), 'd'.repeat(3000), runbook, 'Source: http://prom:9090/graph'], {
      service: 'checkout',
    });
    expect(two).toHaveLength(4000);
    const [summary, description, ...rest] = two.split('\n\n');
    expect(rest).toEqual([runbook, 'Source: http://prom:9090/graph', 'Labels: service=checkout']);
    expect(summary!.length).toBe(description!.length); // an equal share each
    expect(summary!.endsWith('…')).toBe(true);
  });

  it('makes titles', () => {
    expect(makeTitle('HighErrorRate', 'error rate above 5%')).toBe('[HighErrorRate] error rate above 5%');
    expect(makeTitle('HighErrorRate', '')).toBe('HighErrorRate');
    expect(makeTitle('HighErrorRate', undefined)).toBe('HighErrorRate');
    expect(makeTitle('  HighErrorRate ', ' spaced\nout ')).toBe('[HighErrorRate] spaced out');
    const long = makeTitle('A', 'y'.repeat(300));
    expect(long).toHaveLength(200);
    expect(long.endsWith('…')).toBe(true);
  });

  it('clips', () => {
    expect(clip('hello', 10)).toBe('hello');
    expect(clip('hello world', 5)).toBe('hell…');
    expect(clip('ab😀cd', 4)).toBe('ab…');
  });

  it('finds the service in labels', () => {
    expect(serviceFromLabels({ job: 'node', app: 'checkout' })).toBe('checkout');
    expect(serviceFromLabels({ service_name: 'cart', job: 'x' })).toBe('cart');
    expect(serviceFromLabels({ component: 'db' })).toBe('db');
    expect(serviceFromLabels({ service: '', application: 'orders' })).toBe('orders');
    expect(serviceFromLabels({ team: 'payments' })).toBeNull();
  });

  it('parses times', () => {
    const fallback = new Date('2000-01-01T00:00:00Z');
    expect(parseTime('2024-05-14T09:30:00Z', fallback).toISOString()).toBe('2024-05-14T09:30:00.000Z');
    expect(parseTime(1715679000, fallback).toISOString()).toBe('2024-05-14T09:30:00.000Z');
    expect(parseTime(1715679000000, fallback).toISOString()).toBe('2024-05-14T09:30:00.000Z');
    expect(parseTime('1715679000', fallback).toISOString()).toBe('2024-05-14T09:30:00.000Z');
    expect(parseTime('1715679000000', fallback).toISOString()).toBe('2024-05-14T09:30:00.000Z');
    expect(parseTime(1715679000.5, fallback).toISOString()).toBe('2024-05-14T09:30:00.500Z');
    for (const bad of ['0001-01-01T00:00:00Z', 'not a date', '', '$DATE', null, undefined, NaN, {}]) {
      expect(parseTime(bad, fallback), String(bad)).toBe(fallback);
    }
  });
});
