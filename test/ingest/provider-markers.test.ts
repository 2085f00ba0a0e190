import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { alertmanagerProvider } from '../../src/ingest/providers/alertmanager.js';
import { datadogProvider } from '../../src/ingest/providers/datadog.js';
import { genericProvider } from '../../src/ingest/providers/generic.js';
import { grafanaProvider } from '../../src/ingest/providers/grafana.js';
import { deployOrigins, groupOrigin } from '../../src/ingest/providers/markers.js';
import { sentryProvider } from '../../src/ingest/providers/sentry.js';
import type { NormalizedAlert, WebhookProvider } from '../../src/ingest/types.js';

function fixture(name: string): any {
  return JSON.parse(readFileSync(new URL(`../fixtures/webhooks/${name}`, import.meta.url), 'utf8'));
}

function alerts(provider: WebhookProvider, body: unknown, headers: Record<string, string> = {}): NormalizedAlert[] {
  return provider
    .parse(body, (name) => headers[name])
    .events.map((event) => {
      if (event.kind !== 'alert') throw new Error(`expected an alert, got ${event.kind}`);
      return event;
    });
}

function one(provider: WebhookProvider, body: unknown, headers: Record<string, string> = {}): NormalizedAlert {
  const list = alerts(provider, body, headers);
  expect(list).toHaveLength(1);
  return list[0]!;
}

describe('alertmanager: origins and heartbeats', () => {
  const firing = fixture('alertmanager-firing.json');

  it("gives every alert of a group the group's origin, and marks none as a test", () => {
    const list = alerts(alertmanagerProvider, firing);
    expect(list.map((a) => a.origins)).toEqual([
      ['alertmanager:group:{}/{env="production"}:{service="checkout"}'],
      ['alertmanager:group:{}/{env="production"}:{service="checkout"}'],
    ]);
    expect(list.map((a) => a.test)).toEqual([undefined, undefined]);
  });

  it('marks kube-prometheus Watchdog and InfoInhibitor as tests, and DeadMansSwitch (its older name)', () => {
    const list = alerts(alertmanagerProvider, fixture('alertmanager-watchdog.json'));
    expect(list.map((a) => [a.alertName, a.test])).toEqual([
      ['Watchdog', true],
      ['InfoInhibitor', true],
    ]);
    const older = structuredClone(firing);
    older.alerts[0].labels.alertname = 'DeadMansSwitch';
    expect(alerts(alertmanagerProvider, older).map((a) => a.test)).toEqual([true, undefined]);
  });

  it('marks an alert labelled test="true" (any case) as a test, and no other value', () => {
    const body = structuredClone(firing);
    body.alerts[0].labels.test = ' True ';
    body.alerts[1].labels.test = 'false';
    expect(alerts(alertmanagerProvider, body).map((a) => a.test)).toEqual([true, undefined]);
  });

  it('gives no group origin to a route that groups by nothing', () => {
    const body = structuredClone(firing);
    body.groupKey = '{}:{}';
    body.groupLabels = {};
    expect(alerts(alertmanagerProvider, body).map((a) => a.origins)).toEqual([undefined, undefined]);
    delete body.groupLabels; // an older sender: told by the key alone
    expect(alerts(alertmanagerProvider, body).map((a) => a.origins)).toEqual([undefined, undefined]);
    body.groupKey = '   ';
    expect(alerts(alertmanagerProvider, body).map((a) => a.origins)).toEqual([undefined, undefined]);
  });

  it('hashes a group key over 200 characters', () => {
    const body = structuredClone(firing);
    body.groupKey = `{}/{env="production"}:{service="${'x'.repeat(300)}"}`;
    const [a, b] = alerts(alertmanagerProvider, body);
    expect(a!.origins).toEqual([expect.stringMatching(/^alertmanager:group:h:[0-9a-f]{32}$/)]);
    expect(b!.origins).toEqual(a!.origins);
  });

  it('adds the deploy a label or annotation names, one origin for the short and the full SHA', () => {
    const body = structuredClone(firing);
    body.alerts[0].labels.git_sha = '3F9C2AB41D7E86C05B1A2D3E4F5061728394A5B6';
    body.alerts[1].annotations.commit = ' 3f9c2ab ';
    const [a, b] = alerts(alertmanagerProvider, body);
    expect(a!.origins).toEqual(['alertmanager:group:{}/{env="production"}:{service="checkout"}', 'deploy:3f9c2ab']);
    expect(b!.origins).toEqual(a!.origins);
  });
});

describe('deploy origins', () => {
  it('keeps an id of 7 or more characters as it is (lower case, one space per run), qualifies a short one by the service', () => {
    expect(deployOrigins('checkout', [{ deployment_id: 'Dep-2024-05-14  0932' }])).toEqual([
      'deploy:dep-2024-05-14 0932',
    ]);
    expect(deployOrigins('checkout', [{ revision: '3' }])).toEqual(['deploy:checkout@3']);
    expect(deployOrigins(null, [{ revision: '3' }])).toEqual([]);
    expect(deployOrigins('Checkout API', [{ deploy_id: '17' }])).toEqual(['deploy:checkout api@17']);
  });

  it('reads commit keys in any case, ignores empty values and other labels, and names each deploy once', () => {
    expect(
      deployOrigins(
        'checkout',
        [
          { Commit_SHA: 'a1b2c3d4e5', env: 'production', version: '1.2.3', release: 'prometheus' },
          { git_commit: 'A1B2C3D' },
        ],
        {},
      ),
    ).toEqual(['deploy:a1b2c3d']);
    expect(deployOrigins('checkout', [{ commit: '   ' }, undefined])).toEqual([]);
  });

  it("qualifies a service's version by the service unless it is a commit; never a release", () => {
    expect(deployOrigins('checkout', [], { version: '2.4.1' })).toEqual(['deploy:checkout@2.4.1']);
    expect(deployOrigins('checkout', [], { version: '9e8d7c6b5a' })).toEqual(['deploy:9e8d7c6']);
    expect(deployOrigins(null, [], { version: '2.4.1' })).toEqual([]);
    expect(deployOrigins('checkout', [], { release: 'Checkout@2024.05.14-1' })).toEqual([
      'deploy:checkout@2024.05.14-1',
    ]);
    expect(deployOrigins(null, [], { release: '1.0' })).toEqual(['deploy:1.0']);
  });

  it('hashes a value over 200 characters', () => {
    expect(deployOrigins(null, [{ deployment_id: 'd'.repeat(300) }])).toEqual([
      expect.stringMatching(/^deploy:h:[0-9a-f]{32}$/),
    ]);
  });

  it('gives a group origin only to a grouping route', () => {
    expect(groupOrigin('grafana', '{}:{alertname="X"}', { alertname: 'X' })).toBe('grafana:group:{}:{alertname="X"}');
    expect(groupOrigin('grafana', '{}:{alertname="X"}', undefined)).toBe('grafana:group:{}:{alertname="X"}');
    expect(groupOrigin('grafana', undefined, { alertname: 'X' })).toBeUndefined();
    expect(groupOrigin('alertmanager', '{}/{}:{}', {})).toBeUndefined();
  });
});

describe('grafana: the contact point test', () => {
  it("gives a rule's alert its group origin, not a test", () => {
    const alert = one(grafanaProvider, fixture('grafana-firing.json'));
    expect(alert.test).toBeUndefined();
    expect(alert.origins).toEqual([
      'grafana:group:{}/{__grafana_autogenerated__="true"}/{__grafana_receiver__="incident-investigation"}:{alertname="HighErrorRate", grafana_folder="Checkout"}',
    ]);
  });

  it('marks the test notification of Grafana 11–13 as a test, with no origin', () => {
    const alert = one(grafanaProvider, fixture('grafana-test-notification.json'));
    expect(alert).toMatchObject({ alertName: 'TestAlert', test: true, service: null });
    expect(alert.origins).toBeUndefined();
  });

  it('marks the test of older versions (title "[FIRING:1]  (TestAlert Grafana)", no group labels)', () => {
    const body = fixture('grafana-test-notification.json');
    body.title = '[FIRING:1]  (TestAlert Grafana)';
    body.groupLabels = {};
    body.groupKey = '{}/{__grafana_autogenerated__="true"}/{__grafana_receiver__="incident-investigation"}:{}';
    expect(one(grafanaProvider, body).test).toBe(true);
  });

  it('marks a test with custom labels by its group key, and not a rule that happens to look alike', () => {
    const custom = fixture('grafana-test-notification.json');
    custom.alerts[0].labels = { alertname: 'CheckoutDown', instance: 'web-1', service: 'checkout' };
    custom.alerts[0].fingerprint = '0c1d2e3f4a5b6c7d';
    custom.groupKey = 'incident-investigation-0c1d2e3f4a5b6c7d-1715678883';
    expect(one(grafanaProvider, custom)).toMatchObject({ alertName: 'CheckoutDown', test: true });

    const rule = fixture('grafana-firing.json');
    rule.alerts[0].labels.instance = 'Grafana';
    expect(one(grafanaProvider, rule).test).toBeUndefined();
    rule.groupKey = 'not-a-test-{}-1715678883';
    expect(one(grafanaProvider, rule).test).toBeUndefined();
  });
});

describe('datadog: test notifications and origins', () => {
  const triggered = fixture('datadog-triggered.json');

  it('gives a monitor alert its aggregation key as origin', () => {
    const alert = one(datadogProvider, triggered);
    expect(alert.test).toBeUndefined();
    expect(alert.origins).toEqual(['datadog:aggreg:8c1a6e5b2f0d4c7e9a3b1d2f6e8c0a4b']);
  });

  it('marks a test notification and names it as the monitor', () => {
    const alert = one(datadogProvider, fixture('datadog-test-notification.json'));
    expect(alert).toMatchObject({ test: true, alertName: 'High error rate on checkout', service: 'checkout' });
  });

  it('tells a test by either title or by the line Datadog adds to the message', () => {
    const byEventTitle = structuredClone(triggered);
    byEventTitle.title = '[TEST] [Triggered on {service:checkout}] High error rate on checkout';
    expect(one(datadogProvider, byEventTitle).test).toBe(true);
    const byAlertTitle = structuredClone(triggered);
    byAlertTitle.alert_title = '[Triggered] [TEST] High error rate on checkout';
    expect(one(datadogProvider, byAlertTitle).test).toBe(true);
    const byBody = structuredClone(triggered);
    byBody.body = '%%%\nChecking the route\n\nTest notification triggered by jane.doe@example.com.\n%%%';
    expect(one(datadogProvider, byBody).test).toBe(true);
    const named = structuredClone(triggered);
    named.alert_title = 'High error rate on checkout [TEST] page';
    named.title = named.alert_title;
    expect(one(datadogProvider, named).test).toBeUndefined();
  });

  it('adds the deploy of the version tag (per service unless a commit) and of git.commit.sha', () => {
    const body = structuredClone(triggered);
    body.tags = `${body.tags},version:2.4.1`;
    expect(one(datadogProvider, body).origins).toEqual([
      'datadog:aggreg:8c1a6e5b2f0d4c7e9a3b1d2f6e8c0a4b',
      'deploy:checkout@2.4.1',
    ]);
    body.tags = 'service:checkout,version:3f9c2ab41d,git.commit.sha:3f9c2ab41d7e86c05b1a';
    delete body.aggreg_key;
    expect(one(datadogProvider, body).origins).toEqual(['deploy:3f9c2ab']);
  });

  it('marks a monitor tagged test:true', () => {
    const body = structuredClone(triggered);
    body.tags = `${body.tags},test:true`;
    expect(one(datadogProvider, body).test).toBe(true);
  });
});

describe('sentry: sample events and releases', () => {
  it('gives an issue alert its release as origin (tag or event field), in both formats', () => {
    const event = one(sentryProvider, fixture('sentry-event-alert.json'), { 'sentry-hook-resource': 'event_alert' });
    expect(event.origins).toEqual(['deploy:checkout@2024.05.14-1']);
    expect(event.test).toBeUndefined();
    const untagged = fixture('sentry-event-alert.json');
    untagged.data.event.tags = untagged.data.event.tags.filter(([key]: [string]) => key !== 'release');
    expect(one(sentryProvider, untagged).origins).toEqual(['deploy:checkout@2024.05.14-1']);
    expect(one(sentryProvider, fixture('sentry-legacy.json')).origins).toEqual(['deploy:checkout@2024.05.14-1']);
  });

  it('marks the sample event of "Send Test Notification" and of the legacy "Test Plugin" as a test', () => {
    const alert = one(sentryProvider, fixture('sentry-test-notification.json'), {
      'sentry-hook-resource': 'event_alert',
    });
    expect(alert).toMatchObject({ test: true, alertName: 'Test Issue', service: 'checkout' });
    const legacy = fixture('sentry-legacy.json');
    legacy.event.tags.push(['sample_event', 'yes']);
    expect(one(sentryProvider, legacy).test).toBe(true);
  });
});

describe('generic: labels.test and deploy labels', () => {
  it('marks labels.test = "true" as a test', () => {
    expect(one(genericProvider, fixture('generic-test.json')).test).toBe(true);
    expect(one(genericProvider, fixture('generic-single.json')).test).toBeUndefined();
  });

  it('gives alerts naming one commit, through any provider, one origin', () => {
    const sha = 'c0ffee1234567890abcdef1234567890abcdef12';
    const generic = one(genericProvider, { name: 'ErrorBudgetBurn', labels: { service: 'orders', commit_sha: sha } });
    const am = structuredClone(fixture('alertmanager-firing.json'));
    am.alerts[0].labels.git_commit = sha.slice(0, 10);
    const dd = structuredClone(fixture('datadog-triggered.json'));
    dd.tags = `${dd.tags},version:${sha.slice(0, 7)}`;
    expect(generic.origins).toEqual(['deploy:c0ffee1']);
    expect(alerts(alertmanagerProvider, am)[0]!.origins).toContain('deploy:c0ffee1');
    expect(one(datadogProvider, dd).origins).toContain('deploy:c0ffee1');
  });
});
